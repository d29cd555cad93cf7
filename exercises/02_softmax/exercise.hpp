// Exercise 02: softmax over the last dimension, forward and backward.
#pragma once

#include "autograd/autograd.hpp"

struct Softmax : anatomy::Function<Softmax> {
  static constexpr const char* name = "SoftmaxBackward";
  // x [..., N] -> y [..., N]: y_i = exp(x_i) / Σ_j exp(x_j) along the last dimension
  static anatomy::Tensor forward(anatomy::Context& ctx, const anatomy::Tensor& x);
  // grad: dL/dy [..., N] -> {dL/dx}
  static std::vector<anatomy::Tensor> backward(anatomy::Context& ctx, const anatomy::Tensor& grad);
};
