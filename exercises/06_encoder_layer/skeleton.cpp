// Exercise 06: fill in forward (see 06_encoder_layer.md beside this file).
// Check with
//   make exercise NAME=06_encoder_layer DIR=<the folder holding this file>
#include "exercise.hpp"

using namespace anatomy;

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& mask) {
  // TODO: pre-LN: normalize, attend, add the skip connection; then the same around feed_forward.
  (void)x, (void)mask;
  throw Error("not implemented yet: EncoderLayer::forward");
}
