// expect: softmax over the last dimension?
#include "exercise.hpp"

using namespace anatomy;

Tensor Softmax::forward(Context& ctx, const Tensor& x) {
  Tensor e = exp(x - amax(x, {0}, true));
  Tensor y = e / sum(e, {0}, true);
  ctx.save_for_backward({y});
  return y;
}

std::vector<Tensor> Softmax::backward(Context& ctx, const Tensor& grad) {
  const Tensor& y = ctx.saved()[0];
  return {y * (grad - sum(grad * y, {0}, true))};
}
