// What the Trainer's own tests share: a model of one weight, whose steps cost next to nothing,
// and an evaluation that takes a given time on the clock the time budget counts.
#pragma once

#include "training/trainer.hpp"

namespace anatomy::testing {

// A model with one weight: a step costs next to nothing, so the evaluations are the time a run
// spends.
struct OneWeight : nn::Module {
  Tensor w;
  OneWeight() { w = register_parameter("w", tensor({1.0f})); }
};

// An evaluation that takes `seconds` on the clock the budget counts (so a loaded machine
// stretches it no more than it stretches the budget), and returns a falling loss.
inline training::Metrics evaluation_of(double seconds, int& evaluations) {
  const auto start = training::Clock::now();
  while (training::seconds_since(start) < seconds) {
  }
  ++evaluations;
  return training::Metrics{{"valid_loss", 1.0 / evaluations}};
}

}  // namespace anatomy::testing
