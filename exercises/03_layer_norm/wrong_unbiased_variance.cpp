// expect: divides by N - 1 (the unbiased variance)
#include "exercise.hpp"

using namespace anatomy;

Tensor LayerNormFunction::forward(Context& ctx, const Tensor& x, const Tensor& weight,
                                  const Tensor& bias) {
  const float N = static_cast<float>(x.size(-1));
  Tensor centered = x - mean(x, {-1}, true);
  Tensor rstd = rsqrt(sum(centered * centered, {-1}, true) / (N - 1.0f) + eps);
  Tensor x_hat = centered * rstd;
  ctx.save_for_backward({x_hat, rstd, weight});
  return x_hat * weight + bias;
}

std::vector<Tensor> LayerNormFunction::backward(Context& ctx, const Tensor& grad) {
  const Tensor &x_hat = ctx.saved()[0], &rstd = ctx.saved()[1], &weight = ctx.saved()[2];
  const int64_t N = x_hat.size(-1);
  Tensor g = grad * weight;
  return {(g - mean(g, {-1}, true) - x_hat * mean(g * x_hat, {-1}, true)) * rstd,
          (grad * x_hat).reshape({-1, N}).sum({0}), grad.reshape({-1, N}).sum({0})};
}
