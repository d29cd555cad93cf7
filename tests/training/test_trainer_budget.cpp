// The Trainer's time budget: a run ends within it, the last evaluation included; with epochs 0
// it is the run's length, and a decaying schedule is planned for the steps it buys; a resumed
// run continues it.
#include <fstream>

#include "trainer_fixtures.hpp"
#include "training/trainer.hpp"
#include "training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;
using training::Clock;
using training::seconds_since;

namespace {

// A training step of OneWeight that takes `seconds` on the budget's clock and notes the learning
// rate it ran at: the budget-plan tests read the schedule from `rates`.
training::BatchLoss timed_step(OneWeight& model, const nn::Optimizer& opt,
                               std::vector<double>& rates, double seconds) {
  rates.push_back(opt.lr());
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
  return training::BatchLoss{sum(model.w * model.w)};
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
  trainer.loss = [&](int64_t, int64_t) { return timed_step(model, opt, rates, 0.005); };
  int evaluations = 0;
  trainer.evaluate = [&](bool) { return evaluation_of(0.0, evaluations); };
  CHECK(trainer.fit().out_of_time);
  REQUIRE(rates.size() > 40);
  CHECK(*std::max_element(rates.begin(), rates.end()) > 0.5);  // it reached near its peak
  CHECK_MESSAGE(rates.back() < 0.25, rates.back());            // and decayed by the end
  // Gradually, over the steps still to come: 40% into the run the linear decay is near 0.6 of
  // the peak, where a plan that ended at once (or long ago) would be at the floor.
  CHECK_MESSAGE(rates[rates.size() * 2 / 5] > 0.3, rates[rates.size() * 2 / 5]);
  // The pace is measured over the first 10 steps: the 11th step plans, and the 12th already runs
  // at the planned rate, which for at most 200 steps of 5 ms is below 0.97 of the peak. The 11th
  // still runs on the first plan of a million steps.
  CHECK_MESSAGE(rates[10] > 0.999, rates[10]);
  CHECK_MESSAGE(rates[11] < 0.99, rates[11]);
}

// The plan keeps room for the evaluation that ends the run, as the loop's stop does: the steps
// left are the seconds left less the last evaluation's length, at the run's pace. A first epoch
// of 20 steps ends in an evaluation of 0.8 s; the second is longer than the budget of 2.4 s buys,
// so the run stops inside it, 0.8 s before the budget, where the final evaluation just fits.
// The plan ends there and the rate has decayed to about 0 (a step held up on a busy machine
// leaves a few steps' worth). A plan that forgot the evaluation would count 0.8 s of steps still
// to come, a third of the run's, and end with the rate near 0.3 of its peak. The times are set
// by the evaluations and the budget, so a slower machine takes fewer steps of the same shape.
TEST_CASE("a budget-long run plans its schedule to end before the final evaluation") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 1.0});
  nn::WarmupDecaySchedule schedule(opt, 1.0, 5, 1000000);
  training::Trainer trainer(model, opt, &schedule,
                            {.epochs = 0, .time_budget = 2.4, .quiet = true});
  trainer.batches = [](int64_t epoch) { return epoch == 0 ? int64_t{20} : int64_t{1000000}; };
  std::vector<double> rates;
  trainer.loss = [&](int64_t, int64_t) { return timed_step(model, opt, rates, 0.005); };
  int evaluations = 0;
  trainer.evaluate = [&](bool) { return evaluation_of(0.8, evaluations); };
  CHECK(trainer.fit().out_of_time);
  CHECK(evaluations == 2);  // the first epoch's and the final one
  REQUIRE(rates.size() > 40);
  CHECK_MESSAGE(rates.back() < 0.15, rates.back());
}

// The same plan in a resumed run: its pace is the steps this process took over the seconds it
// took, not counting the steps a first process took before it. After 2,000 steps, the steps the
// resumed budget buys (at most 1 s of 5 ms steps) are a small part of the run, so the linear
// decay is already low 40% into them. Counting the first process's steps as this one's would
// inflate the pace, plan thousands of steps past the budget and keep the rate near its peak.
TEST_CASE("a resumed budget-long run plans from its own pace") {
  const std::string dir = fresh_dir("trainer_budget_plan");
  std::vector<double> rates;
  auto fit = [&](bool resume, int64_t epochs, int64_t batches, double step_seconds) {
    OneWeight model;
    nn::SGD opt(model.parameters(), {.lr = 1.0});
    nn::WarmupDecaySchedule schedule(opt, 1.0, 5, 1000000);
    training::Trainer trainer(model, opt, &schedule,
                              {.epochs = epochs,
                               .time_budget = resume ? 2.0 : 0.0,
                               .run_dir = dir,
                               .resume = resume,
                               .quiet = true});
    trainer.batches = [=](int64_t) { return batches; };
    trainer.loss = [&, step_seconds](int64_t, int64_t) {
      return timed_step(model, opt, rates, step_seconds);
    };
    int evaluations = 0;
    trainer.evaluate = [&](bool) { return evaluation_of(0.0, evaluations); };
    return trainer.fit();
  };
  fit(false, 1, 2000, 0.0);
  REQUIRE(rates.size() == 2000);
  CHECK(rates.back() > 0.99);  // a schedule of a million steps has barely begun to decay
  // The same run with 1 s of a 2 s budget spent.
  auto spent = nlohmann::json::parse(bytes(dir + "/run.json"));
  spent["seconds"] = 1.0;
  std::ofstream(dir + "/run.json") << spent.dump();
  rates.clear();
  CHECK(fit(true, 0, 50, 0.005).out_of_time);
  REQUIRE(rates.size() > 40);
  // At most 200 steps to come after 2,000: the planned decay is under 0.1 of the peak.
  CHECK_MESSAGE(rates[rates.size() * 2 / 5] < 0.3, rates[rates.size() * 2 / 5]);
  CHECK_MESSAGE(rates.back() < 0.1, rates.back());
}
