// expect: your dx has the mean(g) term but not x̂ · mean(g · x̂)
#include "exercise.hpp"

using namespace anatomy;

Tensor LayerNormFunction::forward(Context& ctx, const Tensor& x, const Tensor& weight,
                                  const Tensor& bias) {
  Tensor centered = x - mean(x, {-1}, true);
  Tensor rstd = rsqrt(mean(centered * centered, {-1}, true) + eps);
  Tensor x_hat = centered * rstd;
  ctx.save_for_backward({x_hat, rstd, weight});
  return x_hat * weight + bias;
}

std::vector<Tensor> LayerNormFunction::backward(Context& ctx, const Tensor& grad) {
  const Tensor &x_hat = ctx.saved()[0], &rstd = ctx.saved()[1], &weight = ctx.saved()[2];
  const int64_t N = x_hat.size(-1);
  // Sum over every dimension but the last: [..., N] -> [N].
  Tensor dbias = grad.reshape({-1, N}).sum({0});
  Tensor dweight = (grad * x_hat).reshape({-1, N}).sum({0});
  Tensor g = grad * weight;
  Tensor dx = (g - mean(g, {-1}, true)) * rstd;
  return {dx, dweight, dbias};
}
