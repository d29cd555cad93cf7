// The Trainer's loop on a model of one weight, where what is checked is the loop itself: when
// it evaluates and when it stops.
#include <chrono>

#include "helpers.hpp"
#include "training/trainer.hpp"

using namespace anatomy;

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
