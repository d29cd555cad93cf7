// Exercise 07: fill in forward (see 07_decoder_layer.md beside this file).
// Check with
//   make exercise NAME=07_decoder_layer DIR=<the folder holding this file>
#include "exercise.hpp"

using namespace anatomy;

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                             const Tensor& memory_mask) {
  // TODO: masked self-attention, cross-attention over memory, feed-forward; pre-LN, with skip
  // connections.
  (void)x, (void)memory, (void)self_mask, (void)memory_mask;
  throw Error("not implemented yet: DecoderLayer::forward");
}
