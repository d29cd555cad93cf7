// FrozenWeightsGuard: a promise, for a scope, that no parameter changes (decoding, evaluating).
// linear() may then pack each weight for the GEMM once, instead of again at every call: while
// decoding, a step's products are a few hundred rows against each weight, and packing the weight
// again at every step costs about what a step's product does.
//
// Only parameters are packed (leaf tensors that require grad); a copy is kept per weight view
// and dropped with the outermost guard. Writing into a parameter while a guard lives (an
// optimizer step, copy_) leaves linear() using its old values: keep the guard to code that
// only reads the model.
#pragma once

#include "autograd/tensor.hpp"

namespace anatomy {

class FrozenWeightsGuard {
 public:
  FrozenWeightsGuard();
  ~FrozenWeightsGuard();
  FrozenWeightsGuard(const FrozenWeightsGuard&) = delete;
  FrozenWeightsGuard& operator=(const FrozenWeightsGuard&) = delete;
};

// linear(x, weight)'s weight packed for the GEMM, for a product of `rows` rows, when a guard
// lives on this thread, weight is a parameter and this is its second product (a weight used
// once, or only by products the GEMM does not pack for, is never copied); otherwise nullptr
// (pack in the call).
const float* frozen_packed_weight(const Tensor& weight, int64_t rows);

}  // namespace anatomy
