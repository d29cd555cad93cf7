// expect: treats the mean and the variance as constants
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
  return {grad * weight * rstd, (grad * x_hat).reshape({-1, N}).sum({0}),
          grad.reshape({-1, N}).sum({0})};
}
