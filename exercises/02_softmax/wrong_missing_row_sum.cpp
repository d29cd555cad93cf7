// expect: your backward is y * g: it misses the term every output of the row shares
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
  return {y * grad};
}
