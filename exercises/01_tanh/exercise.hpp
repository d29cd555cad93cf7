// Exercise 01: an elementwise op with its backward, as torch.autograd.Function.
#pragma once

#include "autograd/autograd.hpp"

struct Tanh : anatomy::Function<Tanh> {
  static constexpr const char* name = "TanhBackward";
  // x [any shape] -> tanh(x), elementwise
  static anatomy::Tensor forward(anatomy::Context& ctx, const anatomy::Tensor& x);
  // grad: dL/dy, the shape of y -> {dL/dx}
  static std::vector<anatomy::Tensor> backward(anatomy::Context& ctx, const anatomy::Tensor& grad);
};
