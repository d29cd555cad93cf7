// The Trainer's loop on a model of one weight, where what is checked is the loop itself: when
// it evaluates, what it logs and records, and when it stops. Its time budget is
// test_trainer_budget.cpp's, its loss curve test_loss_curve.cpp's.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>

#include "trainer_fixtures.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"
#include "training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

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
