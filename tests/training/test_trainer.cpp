// The Trainer's loop on a model of one weight, where what is checked is the loop itself: when
// it evaluates and when it stops.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "training/train_options.hpp"
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

// The text of curve's loss.svg, written in a fresh folder named after `name`.
std::string loss_svg(const training::LossCurve& curve, const std::string& name) {
  const std::string dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  curve.write_svg(dir + "/loss.svg", "a title");
  return bytes(dir + "/loss.svg");
}

// The number each match of `pattern` captures first, in the order they come.
std::vector<double> captured_numbers(const std::string& text, const std::string& pattern) {
  std::vector<double> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

// What `f` prints on stdout, caught in a file of a fresh folder named after `name`: not a
// terminal, so the progress bar stays silent and only the log lines are written.
template <typename F>
std::string printed(const std::string& name, F f) {
  const std::string dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/stdout.txt";
  {
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    REQUIRE(saved >= 0);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(file >= 0);
    ::dup2(file, STDOUT_FILENO);
    ::close(file);
    struct Restore {
      int saved;
      ~Restore() {
        std::fflush(stdout);
        ::dup2(saved, STDOUT_FILENO);
        ::close(saved);
      }
    } restore{saved};
    f();
  }
  return bytes(path);
}

// The log's lines with each "(R tok/s, T)" cut to "(tok/s, time)", after checking that R is a
// positive rate and T a time: what the lines say apart from how fast this machine ran them.
std::string without_rates(const std::string& log) {
  const std::regex rate(R"re(\((\d+(?:\.\d+)?)[kM]? tok/s, (\d+:\d\d)\))re");
  for (std::sregex_iterator it(log.begin(), log.end(), rate), end; it != end; ++it)
    CHECK_MESSAGE(std::stod((*it)[1]) > 0, it->str());
  return std::regex_replace(log, rate, "(tok/s, time)");
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

// The evaluation a run ends with is told it is the last (a language model then estimates its
// loss on 200 batches instead of 50); those on the way, every eval_every steps and at the end of
// each epoch but the last, are not. 2 epochs of 4 steps, eval_every 3: steps 3, 4, 6 and 8.
TEST_CASE("evaluate's final flag is true for the run's last evaluation only") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  training::Trainer trainer(model, opt, nullptr, {.epochs = 2, .eval_every = 3, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{4}; };
  trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  std::vector<bool> finals;
  trainer.evaluate = [&](bool final) {
    finals.push_back(final);
    return training::Metrics{{"valid_loss", 1.0}};
  };
  CHECK(trainer.fit().step == 8);
  CHECK(finals == std::vector<bool>{false, false, false, true});
  // An eval_every step that is also the epoch's last evaluates once, as the epoch's end: 4
  // batches, eval_every 2, steps 2 and 4.
  finals.clear();
  training::Trainer even(model, opt, nullptr, {.epochs = 1, .eval_every = 2, .quiet = true});
  even.batches = trainer.batches;
  even.loss = trainer.loss;
  even.evaluate = trainer.evaluate;
  CHECK(even.fit().step == 4);
  CHECK(finals == std::vector<bool>{false, true});
}

// A run stopped inside an epoch (here by Ctrl-C, raised during its third batch) ends with an
// evaluation that is its last, told so, and printed as the epoch's partial end; the run folder
// resumes after the three batches it trained.
TEST_CASE("a run stopped inside an epoch ends with a final, partial evaluation") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 1e-30});  // w stays 1: every loss is 1
  const std::string dir = fresh_dir("trainer_stopped");
  training::Trainer trainer(model, opt, nullptr, {.epochs = 2, .eval_every = 2, .run_dir = dir});
  trainer.batches = [](int64_t) { return int64_t{5}; };
  trainer.loss = [&](int64_t, int64_t batch) {
    if (batch == 2) std::raise(SIGINT);  // the Trainer's handler only asks the loop to stop
    return training::BatchLoss{sum(model.w * model.w)};
  };
  std::vector<bool> finals;
  trainer.evaluate = [&](bool final) {
    finals.push_back(final);
    return training::Metrics{{"valid_loss", 1.0}};
  };
  training::TrainResult result;
  const std::string log =
      without_rates(printed("trainer_stopped_log", [&] { result = trainer.fit(); }));
  CHECK(result.interrupted);
  CHECK(result.step == 3);
  CHECK(finals == std::vector<bool>{false, true});
  CHECK(log ==
        "epoch 1/2, step 2  train loss 1.0000  valid loss 1.0000  (tok/s, time)  best\n"
        "epoch 1/2 (partial)  train loss 1.0000  valid loss 1.0000  (tok/s, time)\n"
        "interrupted: saved a checkpoint\n");
  const auto history = nlohmann::json::parse(bytes(dir + "/run.json"))["history"];
  REQUIRE(history.size() == 2);
  CHECK(history[1]["step"] == 3);
  CHECK(history[1]["complete"] == false);
}

// An evaluation inside an epoch (every eval_every steps) is recorded as partial: run.json's
// history says complete false, so a resume from its checkpoint goes on with the rest of that
// epoch. 1 epoch of 4 steps, eval_every 3: steps 3 (partial) and 4 (the epoch's end).
TEST_CASE("an evaluation inside an epoch is recorded as partial, the epoch's last as complete") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  const std::string dir = fresh_dir("trainer_partial");
  training::Trainer trainer(model, opt, nullptr,
                            {.epochs = 1, .eval_every = 3, .run_dir = dir, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{4}; };
  trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  trainer.evaluate = [&](bool) { return training::Metrics{{"valid_loss", 1.0}}; };
  CHECK(trainer.fit().step == 4);
  const auto history = nlohmann::json::parse(bytes(dir + "/run.json"))["history"];
  REQUIRE(history.size() == 2);
  CHECK(history[0]["step"] == 3);
  CHECK(history[0]["complete"] == false);
  CHECK(history[1]["step"] == 4);
  CHECK(history[1]["complete"] == true);
}

// The best evaluation is the one `better` prefers, and only that: a later, worse one does not
// replace it, nor does one whose metrics are NaN (a diverged model), not even the first. Validation
// losses NaN, 2, 1, 3 and NaN at the ends of five epochs, each beside a metric that is text: the
// best is the third.
TEST_CASE("only a better, finite evaluation becomes the best") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  training::Trainer trainer(model, opt, nullptr, {.epochs = 5, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{1}; };
  trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  const std::vector<double> losses = {std::nan(""), 2.0, 1.0, 3.0, std::nan("")};
  size_t evaluations = 0;
  trainer.evaluate = [&](bool) {
    return training::Metrics{{"valid_loss", losses.at(evaluations++)}, {"note", "text"}};
  };
  const training::TrainResult result = trainer.fit();
  CHECK(evaluations == 5);
  REQUIRE(result.best.contains("valid_loss"));
  CHECK(result.best["valid_loss"].get<double>() == 1.0);
}

// A log line's metrics: the usual four first in one order, each in its own format (exact match
// and accuracy as percentages), then any other metric by its name, and text values left out.
TEST_CASE("format_metrics shows the usual metrics first, each in its format") {
  const training::Metrics m = {{"chrf", 45.678},       {"note", "text"}, {"accuracy", 50.0},
                               {"exact_match", 10.26}, {"bleu", 23.456}, {"valid_loss", 1.23456}};
  CHECK(training::format_metrics(m) ==
        "  valid loss 1.2346  BLEU 23.46  exact 10.3%  accuracy 50.0%  chrf 45.68");
}

// fit() needs the number of batches and a loss (loss, or batch and batch_loss): each missing
// piece is refused by name before any step.
TEST_CASE("fit() without batches or without a loss is refused") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  auto loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
  training::Trainer no_batches(model, opt, nullptr, {.epochs = 1, .quiet = true});
  no_batches.loss = loss;
  CHECK_THROWS_WITH_AS(no_batches.fit(), doctest::Contains("set batches, and loss"), Error);
  training::Trainer no_loss(model, opt, nullptr, {.epochs = 1, .quiet = true});
  no_loss.batches = [](int64_t) { return int64_t{2}; };
  CHECK_THROWS_WITH_AS(no_loss.fit(), doctest::Contains("set batches, and loss"), Error);
  no_loss.loss = loss;
  CHECK(no_loss.fit().step == 2);
  CHECK(model.w.item() != 1.0f);  // it trained
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

// loss.svg: a loss sits at the height of the tick that names it, a step at the x of its tick, and
// the y axis's title is centred on the axis, which spans exactly the ticks.
TEST_CASE("loss.svg puts each point on the axes' scale and centres the y title on its axis") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {50, 2.0, 0.002}, {100, 1.0, 0.003}};
  curve.eval = {{100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg");
  auto numbers_after = [&](const std::string& pattern) {
    std::vector<std::pair<double, double>> found;  // (label or first number, coordinate)
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
         ++it)
      found.emplace_back(std::stod((*it)[2]), std::stod((*it)[1]));
    return found;
  };
  // y ticks: <text class="y-tick" x=".." y="Y + 4">LABEL</text>, the label 4 px below its line.
  std::map<double, double> y_of, x_of;
  for (const auto& t : numbers_after(R"re(class="y-tick" x="[^"]*" y="([\d.]+)"[^>]*>([\d.]+)<)re"))
    y_of[t.first] = t.second - 4;
  for (const auto& t : numbers_after(R"re(class="x-tick" x="([\d.]+)"[^>]*>([\d.]+)<)re"))
    x_of[t.first] = t.second;
  REQUIRE(y_of.count(1.0));
  REQUIRE(y_of.count(3.0));
  REQUIRE(x_of.count(0.0));
  REQUIRE(x_of.count(100.0));
  // The axes span exactly the ticks: the first x tick at the grid's left end, the last at its
  // right end, the lowest y tick on the x axis. (These anchor the ticks to the frame, so that a
  // scale that put every tick in one place could not pass the checks below.)
  std::smatch grid, axis;
  REQUIRE(std::regex_search(
      svg, grid,
      std::regex(
          R"re(<line x1="([\d.]+)" x2="([\d.]+)" y1="[\d.]+" y2="[\d.]+" stroke="#ddd")re")));
  REQUIRE(std::regex_search(
      svg, axis,
      std::regex(R"re(<line x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="[\d.]+" stroke="black")re")));
  CHECK(x_of.begin()->second == doctest::Approx(std::stod(grid[1])));
  CHECK(x_of.rbegin()->second == doctest::Approx(std::stod(grid[2])));
  CHECK(y_of.begin()->second == doctest::Approx(std::stod(axis[1])));
  // Each x tick's label sits 18 px below the x axis, inside the picture.
  const auto x_label_ys = captured_numbers(svg, R"re(class="x-tick" x="[\d.]+" y="([\d.]+)")re");
  CHECK(x_label_ys.size() == x_of.size());
  for (const double y : x_label_ys) CHECK(y == doctest::Approx(std::stod(axis[1]) + 18));
  // The training line: step 0 at loss 3, step 100 at loss 1.
  const std::smatch line = [&] {
    std::smatch m;
    REQUIRE(std::regex_search(
        svg, m, std::regex(R"re(points="([\d.]+),([\d.]+) [\d.]+,[\d.]+ ([\d.]+),([\d.]+) ")re")));
    return m;
  }();
  CHECK(std::stod(line[1]) == doctest::Approx(x_of[0.0]).epsilon(1e-3));
  CHECK(std::stod(line[2]) == doctest::Approx(y_of[3.0]).epsilon(1e-3));
  CHECK(std::stod(line[3]) == doctest::Approx(x_of[100.0]).epsilon(1e-3));
  CHECK(std::stod(line[4]) == doctest::Approx(y_of[1.0]).epsilon(1e-3));
  std::smatch title;
  REQUIRE(
      std::regex_search(svg, title, std::regex(R"re(translate\(16,([\d.]+)\) rotate\(-90\))re")));
  const double top = y_of.rbegin()->second, bottom = y_of.begin()->second;
  CHECK(top < bottom);  // the highest loss is drawn highest
  CHECK(std::stod(title[1]) == doctest::Approx((top + bottom) / 2).epsilon(1e-3));
  // The plot's title is centred on the picture.
  std::smatch size, heading;
  REQUIRE(std::regex_search(svg, size, std::regex(R"re(<svg [^>]*width="([\d.]+)")re")));
  REQUIRE(std::regex_search(svg, heading, std::regex(R"re(<text x="([\d.]+)"[^>]*>a title<)re")));
  CHECK(std::stod(heading[1]) == doctest::Approx(std::stod(size[1]) / 2));
}

// The y axis starts at the lowest loss's tick, not at 0: losses between 5.2 and 6 (a language
// model's first steps) drawn from 0 would be a flat line at the top of the picture.
TEST_CASE("loss.svg's y axis spans the losses, not 0 to the highest") {
  training::LossCurve curve;
  curve.train = {{0, 6.0, 0.001}, {50, 5.6, 0.002}, {100, 5.2, 0.003}};
  const std::vector<double> labels =
      captured_numbers(loss_svg(curve, "loss_svg_range"), R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  const double lowest = *std::min_element(labels.begin(), labels.end());
  CHECK(lowest >= 5.0);
  CHECK(lowest <= 5.2);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 6.0);
}

// The x axis reaches the last point of either kind: the final evaluation comes after the last
// logged training loss (losses are logged every few steps), and its dot must not fall off the
// plot.
TEST_CASE("loss.svg's x axis reaches an evaluation after the last training point") {
  training::LossCurve curve;
  curve.train = {{0, 6.0, 0.001}, {50, 5.6, 0.002}, {100, 5.2, 0.003}};
  curve.eval = {{40, 5.8, {}}, {130, 5.1, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_x_range");
  const auto labels = captured_numbers(svg, R"re(class="x-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 130.0);
  const auto width = captured_numbers(svg, R"re(<svg [^>]*width="([\d.]+)")re");
  REQUIRE(width.size() == 1);
  // The evaluations' dots (the legend's dot is followed by its text, not a line break).
  const auto dots =
      captured_numbers(svg, R"re(<circle cx="([\d.]+)" cy="[\d.]+" r="4" fill="#d62728"/>\n)re");
  REQUIRE(dots.size() == 2);
  CHECK(dots[0] < dots[1]);
  CHECK(dots[1] < width[0]);
}

// The legend, top right: the training line's sample, its label, the evaluations' dot and its
// label, left to right on one row, inside the picture, each label with room for its ten
// characters (about 70 px at 12 px sans-serif) and its baseline 4 px below the marks' middle, as
// the y axis's labels have.
TEST_CASE("loss.svg's legend is one row inside the picture, each label beside its mark") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {100, 1.0, 0.002}};
  curve.eval = {{100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_legend");
  std::smatch m;
  REQUIRE(std::regex_search(
      svg, m,
      std::regex(R"re(<line x1="([\d.]+)" x2="([\d.]+)" y1="([\d.]+)" y2="([\d.]+)" )re"
                 R"re(stroke="#1f77b4" stroke-width="2"/><text x="([\d.]+)" y="([\d.]+)">)re"
                 R"re(train loss</text><circle cx="([\d.]+)" cy="([\d.]+)" r="4" )re"
                 R"re(fill="#d62728"/><text x="([\d.]+)" y="([\d.]+)">valid loss</text>)re")));
  std::vector<double> v;
  for (size_t i = 1; i < m.size(); ++i) v.push_back(std::stod(m[i]));
  const double line_x1 = v[0], line_x2 = v[1], line_y1 = v[2], line_y2 = v[3], train_x = v[4],
               train_y = v[5], dot_x = v[6], dot_y = v[7], valid_x = v[8], valid_y = v[9];
  const auto width = captured_numbers(svg, R"re(<svg [^>]*width="([\d.]+)")re");
  REQUIRE(width.size() == 1);
  CHECK(line_y1 == line_y2);
  CHECK(dot_y == line_y1);
  CHECK(train_y == line_y1 + 4);
  CHECK(valid_y == line_y1 + 4);
  const auto title = captured_numbers(svg, R"re(<text x="[\d.]+" y="([\d.]+)" font-size="15")re");
  REQUIRE(title.size() == 1);
  CHECK(line_y1 - 6 > title[0]);  // below the title's baseline
  CHECK(0 < line_x1);
  CHECK(line_x1 < line_x2);
  CHECK(line_x2 < train_x);
  CHECK(train_x + 70 <= dot_x - 4);
  CHECK(dot_x + 4 < valid_x);
  CHECK(valid_x + 70 <= width[0]);
}

// A diverged evaluation (an infinite or NaN loss) is left off the plot: the axes span the finite
// losses, as they would without it, and no coordinate of the picture is "inf" or "nan".
TEST_CASE("loss.svg leaves out a loss that is not finite and keeps the others' scale") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {100, 1.0, 0.002}};
  curve.eval = {{50, INFINITY, {}}, {60, NAN, {}}, {100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_not_finite");
  const auto labels = captured_numbers(svg, R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  CHECK(*std::min_element(labels.begin(), labels.end()) <= 1.0);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 3.0);
  CHECK(*std::max_element(labels.begin(), labels.end()) < 4.0);
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  const auto dots =
      captured_numbers(svg, R"re(<circle cx="([\d.]+)" cy="[\d.]+" r="4" fill="#d62728"/>\n)re");
  CHECK(dots.size() == 1);
  // One loss alone: the axis is drawn around it, not from 0 to 1.
  training::LossCurve one;
  one.train = {{10, 5.0, 0.001}};
  const auto one_labels =
      captured_numbers(loss_svg(one, "loss_svg_one"), R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(!one_labels.empty());
  CHECK(*std::min_element(one_labels.begin(), one_labels.end()) <= 5.0);
  CHECK(*std::max_element(one_labels.begin(), one_labels.end()) >= 5.0);
}

// The lines a run prints: every --log-every steps inside an epoch, the train loss (and its NLL)
// since the line before with the learning rate; at each epoch's end the epoch's train loss over
// all its tokens, the evaluation, and "best" when it is. Batch b (from 0) of each of the six
// batches of an epoch has loss 1 + b over b + 1 tokens and NLL 0.5 + b: batches 0 and 1 give
// (1 + 4) / 3 and (0.5 + 3) / 3, batches 2 and 3 (9 + 16) / 7 and (7.5 + 14) / 7, and all six
// 91 / 21 and 80.5 / 21.
TEST_CASE("the log lines show each window's and each epoch's losses, the rate and the best") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 1e-30});  // w stays 1: the losses are the ones given
  training::Trainer trainer(model, opt, nullptr, {.epochs = 2, .clip = 0, .log_every = 2});
  trainer.batches = [](int64_t) { return int64_t{6}; };
  trainer.loss = [&](int64_t, int64_t batch) {
    const auto b = static_cast<float>(batch);
    return training::BatchLoss{sum(model.w * (1 + b)), batch + 1, 0.5 + b};
  };
  const std::vector<double> valid = {2.0, 3.0};
  size_t evaluations = 0;
  trainer.evaluate = [&](bool) {
    return training::Metrics{{"valid_loss", valid.at(evaluations++)}};
  };
  const std::string log = without_rates(printed("log_lines", [&] { trainer.fit(); }));
  CHECK(log ==
        "epoch 1/2, batch 2/6  train loss 1.6667 (nll 1.1667)  lr 1.00e-30  (tok/s, time)\n"
        "epoch 1/2, batch 4/6  train loss 3.5714 (nll 3.0714)  lr 1.00e-30  (tok/s, time)\n"
        "epoch 1/2  train loss 4.3333 (nll 3.8333)  valid loss 2.0000  (tok/s, time)  best\n"
        "epoch 2/2, batch 2/6  train loss 1.6667 (nll 1.1667)  lr 1.00e-30  (tok/s, time)\n"
        "epoch 2/2, batch 4/6  train loss 3.5714 (nll 3.0714)  lr 1.00e-30  (tok/s, time)\n"
        "epoch 2/2  train loss 4.3333 (nll 3.8333)  valid loss 3.0000  (tok/s, time)\n");
  // Counted in steps, with no NLL (the loss is the NLL itself), and what the best is chosen by.
  training::Trainer steps(
      model, opt, nullptr,
      {.epochs = 1, .clip = 0, .log_every = 3, .unit = "step", .best_by = "validation loss"});
  steps.batches = [](int64_t) { return int64_t{4}; };
  steps.loss = [&](int64_t, int64_t batch) {
    return training::BatchLoss{sum(model.w * static_cast<float>(batch)), 2};
  };
  steps.evaluate = [&](bool) { return training::Metrics{{"valid_loss", 0.5}}; };
  CHECK(without_rates(printed("log_lines_steps", [&] { steps.fit(); })) ==
        "step 3/4  train loss 1.0000  lr 1.00e-30  (tok/s, time)\n"
        "step 4/4  train loss 1.5000  valid loss 0.5000  (tok/s, time)  best (validation loss)\n");
  // A resumed run counted in steps says at which step it picks up.
  const std::string dir = fresh_dir("log_lines_resume");
  for (const bool resume : {false, true}) {
    training::Trainer run(model, opt, nullptr,
                          {.epochs = resume ? 2 : 1,
                           .unit = "step",
                           .run_dir = dir,
                           .resume = resume,
                           .quiet = !resume});
    run.batches = [](int64_t) { return int64_t{4}; };
    run.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w)}; };
    const std::string log = printed("log_lines_resumed", [&] { run.fit(); });
    if (resume) CHECK_MESSAGE(log.find("resuming " + dir + " at step 4\n") == 0, log);
  }
}

// A point of the loss curve is the mean of curve_every steps' losses, one step one vote whatever
// its tokens, and the next point starts from nothing: losses 1, 2, 3 and 4 (over 1, 2, 3 and 4
// tokens) in windows of two give 1.5 at step 2 and 3.5 at step 4.
TEST_CASE("each point of the loss curve is the mean of its own window of steps") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 1e-30});  // w stays 1: the losses are the ones given
  const std::string dir = fresh_dir("curve_windows");
  training::Trainer trainer(
      model, opt, nullptr,
      {.epochs = 1, .clip = 0, .curve_every = 2, .run_dir = dir, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{4}; };
  trainer.loss = [&](int64_t, int64_t batch) {
    return training::BatchLoss{sum(model.w * static_cast<float>(batch + 1)), batch + 1};
  };
  trainer.fit();
  const auto curve = nlohmann::json::parse(bytes(dir + "/run.json"))["curve"];
  REQUIRE(curve.size() == 2);
  CHECK(curve[0][0] == 2);
  CHECK(curve[0][1].get<double>() == doctest::Approx(1.5));
  CHECK(curve[0][2].get<double>() == doctest::Approx(1e-30).scale(0));
  CHECK(curve[1][0] == 4);
  CHECK(curve[1][1].get<double>() == doctest::Approx(3.5));
}

// keep_last N keeps the models of the last N evaluations in checkpoints/, named by step, and
// removes the older ones; 1 keeps none (last/ already holds the newest).
TEST_CASE("keep_last keeps the newest evaluations' models and removes the rest") {
  for (const int64_t keep : {1, 3}) {
    CAPTURE(keep);
    OneWeight model;
    nn::SGD opt(model.parameters(), {.lr = 0.01});
    const std::string dir = fresh_dir(fmt::format("keep_last_{}", keep));
    training::Trainer trainer(model, opt, nullptr,
                              {.epochs = 5, .run_dir = dir, .quiet = true, .keep_last = keep});
    trainer.batches = [](int64_t) { return int64_t{1}; };
    trainer.loss = [&](int64_t, int64_t) { return training::BatchLoss{sum(model.w * model.w)}; };
    trainer.fit();
    const auto kept = training::kept_checkpoints(training::RunDir{dir});
    if (keep == 1) {
      CHECK(kept.empty());
      continue;
    }
    REQUIRE(kept.size() == 3);
    for (int64_t i = 0; i < 3; ++i)
      CHECK(kept[i] == fmt::format("{}/checkpoints/step_{:08}.safetensors", dir, i + 3));
    // Each is the model as it was at its step: the newest is the last model.
    CHECK(bytes(kept[2]) == bytes(dir + "/last/model.safetensors"));
    CHECK(bytes(kept[1]) != bytes(kept[2]));
    // Only the step_*.safetensors files are kept models: what else is in the folder is not.
    std::ofstream(dir + "/checkpoints/notes.safetensors") << "x";
    std::ofstream(dir + "/checkpoints/step_00000009.safetensors.tmp123") << "x";
    CHECK(training::kept_checkpoints(training::RunDir{dir}) == kept);
  }
}

// A batch's tensors must share their first dimension, of at least one row: anything else is
// refused by name, with the shapes, before a step.
TEST_CASE("a batch whose tensors disagree on their rows is refused with their shapes") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.01});
  auto refused = [&](const training::Batch& b, const std::string& fragment) {
    training::Trainer trainer(model, opt, nullptr, {.epochs = 1, .quiet = true});
    trainer.batches = [](int64_t) { return int64_t{1}; };
    trainer.batch = [&](int64_t, int64_t) { return b; };
    trainer.batch_loss = [&](nn::Module&, const training::Batch&) {
      return training::BatchLoss{sum(model.w * model.w)};
    };
    check_error([&] { (void)trainer.fit(); }, {fragment});
  };
  refused({}, "Trainer: batch returned a Batch that holds no tensor");
  refused({.input = zeros({4, 2}), .labels = zeros({3, 2})},
          "its input has shape [4, 2], its labels [3, 2]");
  refused({.input = zeros({4, 2}), .decoder_input = zeros({4, 3}), .labels = zeros({5})},
          "its input has shape [4, 2], its labels [5]");
  refused({.input = zeros({4}), .labels = zeros({})}, "its input has shape [4], its labels []");
  refused({.labels = zeros({0, 2})}, "its labels has shape [0, 2], its labels [0, 2]");
}

// A data-parallel part is the same rows of each tensor the batch holds; a tensor it does not
// hold stays empty.
TEST_CASE("a batch's slice takes the same rows of each tensor it holds") {
  const training::Batch b{.input = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {3, 2}),
                          .labels = from_vector(std::vector<float>{7, 8, 9}, {3})};
  CHECK(b.rows() == 3);
  const training::Batch part = b.slice(1, 3);
  CHECK(part.rows() == 2);
  CHECK(part.input.to_vector() == std::vector<float>{2, 3, 4, 5});
  CHECK(part.labels.to_vector() == std::vector<float>{8, 9});
  CHECK(!part.decoder_input.defined());
}

// A language model's windows: x is T ids from a start i and y the same shifted by one, and every
// start from 0 to the last whose target ends at the last id comes up (nanoGPT's get_batch). Ids
// 0..19 in windows of 5: starts 0 to 14, each row counting up from its start.
TEST_CASE("sample_windows draws every window of the ids, the last one included") {
  std::vector<int64_t> ids(20);
  std::iota(ids.begin(), ids.end(), 0);
  Generator g(5);
  const auto windows = training::sample_windows(ids, 600, 5, g);
  const Tensor &x = windows.first, &y = windows.second;
  REQUIRE(x.shape() == Shape{600, 5});
  REQUIRE(y.shape() == Shape{600, 5});
  const std::vector<int64_t> xs = x.to_int_vector(), ys = y.to_int_vector();
  std::set<int64_t> starts;
  for (size_t row = 0; row < 600; ++row) {
    starts.insert(xs[row * 5]);
    for (size_t t = 0; t < 5; ++t) {
      CHECK(xs[row * 5 + t] == xs[row * 5] + static_cast<int64_t>(t));
      CHECK(ys[row * 5 + t] == xs[row * 5 + t] + 1);
    }
  }
  CHECK(starts.size() == 15);
  CHECK(*starts.begin() == 0);
  CHECK(*starts.rbegin() == 14);
  // One window is a batch too.
  CHECK(training::sample_windows(ids, 1, 5, g).first.shape() == Shape{1, 5});
  // Fewer ids than a window and its target is refused by name, not read past the end.
  CHECK_THROWS_WITH_AS(training::sample_windows(std::vector<int64_t>(5), 2, 5, g),
                       doctest::Contains("sample_windows: expected"), Error);
}

// The progress bar's ETA: the batches left at the pace so far, cut to what the time budget has
// left, and never below zero once the budget is spent.
TEST_CASE("the ETA is the pace's estimate, at most what the time budget leaves") {
  CHECK(training::time_left(0.5, 200, 0.0, 30.0) == doctest::Approx(100.0));  // no budget
  CHECK(training::time_left(0.5, 200, 60.0, 20.0) == doctest::Approx(40.0));  // the budget's 40 s
  CHECK(training::time_left(0.5, 20, 60.0, 20.0) == doctest::Approx(10.0));   // the pace's 10 s
  CHECK(training::time_left(0.5, 200, 60.0, 75.0) == 0.0);                    // spent
}

// An epoch's training loss is the mean over its tokens: batches of losses 1, 2 and 3 weighted by
// 1, 2 and 3 tokens give (1 + 4 + 9) / 6, which run.json's history records.
TEST_CASE("an epoch's training loss is its batches' losses weighted by their tokens") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.0});
  const std::string dir = fresh_dir("trainer_epoch_loss");
  training::Trainer trainer(model, opt, nullptr,
                            {.epochs = 2, .run_dir = dir, .title = "t", .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{3}; };
  trainer.loss = [&](int64_t, int64_t batch) {
    const auto value = static_cast<float>(batch + 1);
    return training::BatchLoss{sum(model.w * 0.0f) + value, batch + 1};
  };
  int evaluations = 0;
  trainer.evaluate = [&](bool) { return evaluation_of(0.0, evaluations); };
  trainer.fit();
  const auto history = nlohmann::json::parse(bytes(dir + "/run.json"))["history"];
  REQUIRE(history.size() == 2);
  for (const auto& entry : history)  // each epoch's mean starts from nothing
    CHECK(entry["train_loss"].get<double>() == doctest::Approx(14.0 / 6.0));
}

// A loss that becomes NaN stops the run with the step it happened at: here the third, batch 2
// (counting from 0) of epoch 1.
TEST_CASE("a NaN loss is refused with the step it came at") {
  OneWeight model;
  nn::SGD opt(model.parameters(), {.lr = 0.0});
  training::Trainer trainer(model, opt, nullptr, {.epochs = 1, .quiet = true});
  trainer.batches = [](int64_t) { return int64_t{5}; };
  trainer.loss = [&](int64_t, int64_t batch) {
    const float value = batch == 2 ? std::numeric_limits<float>::quiet_NaN() : 1.0f;
    return training::BatchLoss{sum(model.w * 0.0f) + value};
  };
  CHECK_THROWS_WITH_AS(trainer.fit(), doctest::Contains("the loss became NaN at step 3 (epoch 1"),
                       Error);
}

// threads 0 (--threads unset) keeps the thread count the program has set (set_num_threads), as a
// program of one's own calling training::train expects; threads N sets N. Every kind of run is
// tried, from a count no default here takes (the cores, or OMP_NUM_THREADS). They train, so they
// are end-to-end (the sanitizer run skips them).
TEST_CASE("training::train with threads 0 keeps the program's thread count, with N sets N" *
          doctest::test_suite("end-to-end")) {
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  const std::string dir = fresh_dir("threads_kept");
  std::filesystem::create_directories(dir);
  {
    std::ofstream text(dir + "/text.txt"), labelled(dir + "/labelled.tsv");
    for (int i = 0; i < 100; ++i) text << "to be or not to be\n";
    for (int i = 0; i < 10; ++i)
      labelled << "is it " << i << "?\tquestion\nit is " << i << ".\tstatement\n";
  }
  std::vector<training::TrainOptions> runs(4);
  runs[0].task = "lm", runs[0].text = dir + "/text.txt", runs[0].iters = 2;
  runs[1].task = "copy", runs[1].epochs = 1, runs[1].limit = 64;
  runs[2].task = "majority", runs[2].epochs = 1, runs[2].limit = 64;
  const std::string bert = test_venv_bert();
  runs[3].task = "classify", runs[3].model_dir = bert, runs[3].data = dir + "/labelled.tsv";
  runs[3].epochs = 1;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].task == "classify" && bert.empty()) continue;
    CAPTURE(runs[k].task);
    if (runs[k].task != "classify") runs[k].preset = "tiny";
    set_num_threads(3);
    runs[k].out = fmt::format("{}/run{}", dir, k);
    REQUIRE(training::train(runs[k]) == 0);
    CHECK(get_num_threads() == 3);
    runs[k].threads = 1;
    runs[k].out += "_one";
    REQUIRE(training::train(runs[k]) == 0);
    CHECK(get_num_threads() == 1);
  }
}
