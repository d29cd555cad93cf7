// The Trainer's loop on a model of one weight, where what is checked is the loop itself: when
// it evaluates and when it stops.
#include <chrono>
#include <fstream>

#include <sstream>

#include "training/trainer.hpp"
#include "training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A model with one weight: a step costs next to nothing, so the evaluations are the time a run
// spends.
struct OneWeight : nn::Module {
  Tensor w;
  OneWeight() { w = register_parameter("w", tensor({1.0f})); }
};

// An evaluation that takes `seconds` on the clock the budget counts (so a loaded machine
// stretches it no more than it stretches the budget), and returns a falling loss.
training::Metrics evaluation_of(double seconds, int& evaluations) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
  ++evaluations;
  return training::Metrics{{"valid_loss", 1.0 / evaluations}};
}

}  // namespace

// The budget keeps room for the evaluation that ends the run: the loop stops once the time
// spent and the last evaluation's length together pass the budget. Evaluations of 0.4 s at the
// end of each epoch, a budget of 1 s: epochs 1 and 2 end at about 0.4 and 0.8 s, and epoch 3
// would end at 1.2 s, past the budget, so the run stops after 2. A loop that did not count the
// evaluation's length would start epoch 3 and end past its budget.
TEST_CASE("the time budget counts the last evaluation's length: the run ends within it") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  const double budget = 1.0, evaluation = 0.4;
  training::Trainer trainer(model, opt, nullptr,
                            {.epochs = 100, .time_budget = budget, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{4}; };
  trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  int evaluations = 0;
  trainer.evaluate = [&](bool) {
    // An evaluation that takes its time: measured on the clock the budget counts, so a loaded
    // machine stretches it no more than it stretches the budget.
    const auto start = Clock::now();
    while (seconds_since(start) < evaluation) {
    }
    ++evaluations;
    return training::Metrics{{"valid_loss", 1.0 / evaluations}};
  };
  const auto start = Clock::now();
  const training::TrainResult result = trainer.fit();
  const double took = seconds_since(start);
  CHECK(result.out_of_time);
  CHECK(evaluations == 2);
  CHECK_MESSAGE(took < budget, took);
}

// Without a number of epochs, a time budget is the run's length: the loop goes on epoch after
// epoch until the budget (epochs of 0.25 s, a budget of 1.2 s: 4 of them, or fewer when the
// machine adds time between them; the fifth would end past it). A loop that took epochs 0 as
// "none" would evaluate never; one that ignored the budget would not stop.
TEST_CASE("with epochs 0, the time budget is the run's length") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  training::Trainer trainer(model, opt, nullptr, {.epochs = 0, .time_budget = 1.2, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{2}; };
  trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  int evaluations = 0;
  trainer.evaluate = [&](bool) { return evaluation_of(0.25, evaluations); };
  const training::TrainResult result = trainer.fit();
  CHECK(result.out_of_time);
  CHECK(evaluations >= 2);
  CHECK(evaluations <= 4);
  CHECK(result.step == 2 * evaluations);
  // Without a budget, epochs 0 is refused, naming both.
  training::Trainer endless(model, opt, nullptr, {.epochs = 0, .quiet = true});
  endless.batches = trainer.batches;
  endless.loss = trainer.loss;
  CHECK_THROWS_WITH_AS(endless.fit(),
                       doctest::Contains("epochs must be >= 1, or 0 with a time budget"), Error);
}

// A resumed run has what is left of its budget: it reads the seconds spent from run.json. Here
// run.json says 1 s of a 1.5 s budget is spent and an epoch's evaluation takes 0.3 s: the
// resumed run trains one epoch (which ends at 1.3 s, and a second would end past 1.5 s), where
// a run counting from zero would train four.
TEST_CASE("a resumed run continues the same time budget") {
  const std::string dir = fresh_dir("trainer_budget");
  int evaluations = 0;
  auto fit = [&](bool resume, int64_t epochs, double budget, double evaluation) {
    OneWeight model;
    nn::SGD opt(model.parameters(), {.lr = 0.01});
    training::Trainer trainer(
        model, opt, nullptr,
        {.epochs = epochs, .time_budget = budget, .run_dir = dir, .resume = resume, .quiet = true});
    trainer.batches = [](int64_t) { return int64_t{2}; };
    trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
    trainer.evaluate = [&](bool) { return evaluation_of(evaluation, evaluations); };
    return trainer.fit();
  };
  // A first process: its run.json counts the seconds it took, no more.
  const auto start = Clock::now();
  fit(false, 1, 0, 0.1);
  const double took = seconds_since(start);
  const auto first = nlohmann::json::parse(bytes(dir + "/run.json"));
  CHECK(first["seconds"].get<double>() >= 0.1);
  CHECK(first["seconds"].get<double>() <= took);
  // The same run, 1 s of its budget spent.
  auto spent = first;
  spent["seconds"] = 1.0;
  std::ofstream(dir + "/run.json") << spent.dump();
  evaluations = 0;
  CHECK(fit(true, 100, 1.5, 0.3).out_of_time);
  CHECK(evaluations == 1);
  // Its seconds go on from the spent ones.
  CHECK(nlohmann::json::parse(bytes(dir + "/run.json"))["seconds"].get<double>() >= 1.3);
}

// A schedule that decays to the end of the run, in a run as long as its budget: the trainer
// re-plans the schedule's length from its pace, so the rate has decayed near its floor when the
// budget ends. A schedule left at its first plan (here a length far past what the budget buys)
// would still be near its peak.
TEST_CASE("a budget-long run plans a decaying schedule for the steps the budget buys") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 1.0});
  nn::WarmupDecaySchedule schedule(opt, 1.0, 5, 1000000);
  training::Trainer trainer(model, opt, &schedule,
                            {.epochs = 0, .time_budget = 1.0, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{50}; };
  std::vector<double> rates;
  trainer.loss = [&](int64_t, int64_t) {
    rates.push_back(opt.lr());
    const auto start = Clock::now();  // a step of 5 ms
    while (seconds_since(start) < 0.005) {
    }
    return training::BatchLoss{sum(model.w * model.w)};
  };
  int evaluations = 0;
  trainer.evaluate = [&](bool) { return evaluation_of(0.0, evaluations); };
  CHECK(trainer.fit().out_of_time);
  REQUIRE(rates.size() > 40);
  CHECK(*std::max_element(rates.begin(), rates.end()) > 0.5);  // it reached near its peak
  CHECK_MESSAGE(rates.back() < 0.25, rates.back());            // and decayed by the end
}

// loss.csv: one row per step in step order, an evaluation at a step with no training point
// gets a row of its own between the others, and each metric has its named column.
TEST_CASE("loss.csv names its columns and merges training and validation by step") {
  training::LossCurve curve;
  curve.train = {{20, 2.5, 0.001}, {40, 2.0, 0.002}, {60, 1.5, 0.003}};
  curve.eval = {{30, 2.25, {{"bleu", 12.5}, {"exact_match", 5.0}}},
                {60, 1.75, {{"bleu", 20.0}, {"exact_match", 10.0}}},
                {70, 1.5, {{"bleu", 25.0}}}};
  const std::string dir = fresh_dir("loss_csv");
  std::filesystem::create_directories(dir);
  curve.write_csv(dir + "/loss.csv");
  CHECK(bytes(dir + "/loss.csv") ==
        "step,train_loss,lr,valid_loss,valid_bleu,valid_exact_match\n"
        "20,2.500000,0.001,,,\n"
        "30,,,2.250000,12.5000,5.0000\n"
        "40,2.000000,0.002,,,\n"
        "60,1.500000,0.003,1.750000,20.0000,10.0000\n"
        "70,,,1.500000,25.0000,\n");
}
