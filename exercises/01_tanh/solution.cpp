// Exercise 01, a reference solution.
#include "exercise.hpp"

using namespace anatomy;

Tensor Tanh::forward(Context& ctx, const Tensor& x) {
  Tensor y = tanh(x);
  ctx.save_for_backward({y});  // the derivative needs only the output
  return y;
}

std::vector<Tensor> Tanh::backward(Context& ctx, const Tensor& grad) {
  const Tensor& y = ctx.saved()[0];
  return {grad * (1.0f - y * y)};
}
