// expect: only the diagonal of the Jacobian
#include "exercise.hpp"

using namespace anatomy;

Tensor Softmax::forward(Context& ctx, const Tensor& x) {
  Tensor e = exp(x - amax(x, {-1}, true));
  Tensor y = e / sum(e, {-1}, true);
  ctx.save_for_backward({y});
  return y;
}

std::vector<Tensor> Softmax::backward(Context& ctx, const Tensor& grad) {
  const Tensor& y = ctx.saved()[0];
  return {grad * y * (1.0f - y)};
}
