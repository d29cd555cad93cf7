// Exercise 04: fill in the function (see 04_attention.md beside this file).
// Check with
//   make exercise NAME=04_attention DIR=<the folder holding this file>
#include "exercise.hpp"

using namespace anatomy;

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& q, const Tensor& k,
                                                       const Tensor& v, const Tensor& mask) {
  // TODO: scores [B, Tq, Tk] = q kᵀ / sqrt(d_k); where mask == 0, -inf; weights = softmax over
  // the keys; output = weights v.
  (void)q, (void)k, (void)v, (void)mask;
  throw Error("not implemented yet: scaled_dot_product_attention");
}
