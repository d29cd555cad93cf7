// Checker of exercise 03.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("03_layer_norm");
  const Tensor x = c.golden("x"), w = c.golden("weight"), b = c.golden("bias");
  const Tensor r = c.golden("grad_out"), want = c.golden("out");
  Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_(),
         bg = b.clone().requires_grad_(), y;
  if (!c.run("forward runs", [&] { y = LayerNormFunction::apply(xg, wg, bg); })) return c.finish();
  if (!c.check(exercise::close(y, want), "forward equals torch's layer_norm",
               exercise::compare(y, want))) {
    const float N = static_cast<float>(x.size(-1));
    Tensor centered = x - mean(x, {-1}, true);
    Tensor unbiased = centered * rsqrt(sum(centered * centered, {-1}, true) / (N - 1) + 1e-5f);
    if (exercise::close(y, unbiased * w + b))
      c.diagnose(
          "your variance divides by N - 1 (the unbiased variance): LayerNorm uses the "
          "biased one, mean((x - mean)²), dividing by N");
    else if (exercise::close(y, centered * rsqrt(mean(centered * centered, {-1}, true) + 1e-5f)))
      c.diagnose("your output ignores weight and bias: scale x̂ by weight, then add bias");
    return c.finish();
  }
  if (!c.run("backward runs", [&] { (y * r).sum().backward(); })) return c.finish();
  c.check(exercise::close(bg.grad(), c.golden("grad_bias")), "dL/dbias equals PyTorch's",
          exercise::compare(bg.grad(), c.golden("grad_bias")));
  c.check(exercise::close(wg.grad(), c.golden("grad_weight")), "dL/dweight equals PyTorch's",
          exercise::compare(wg.grad(), c.golden("grad_weight")));
  const Tensor gx = xg.grad(), gwant = c.golden("grad_x");
  if (!c.check(exercise::close(gx, gwant), "dL/dx equals PyTorch's",
               exercise::compare(gx, gwant))) {
    Tensor centered = x - mean(x, {-1}, true);
    const Tensor rstd = rsqrt(mean(centered * centered, {-1}, true) + 1e-5f);
    const Tensor x_hat = centered * rstd, g = r * w;
    if (exercise::close(gx, (g - mean(g, {-1}, true)) * rstd))
      c.diagnose(
          "your dx has the mean(g) term but not x̂ · mean(g · x̂): the variance depends on x "
          "too, dx = (g - mean(g) - x̂ · mean(g · x̂)) · rstd");
    else if (exercise::close(gx, (g - x_hat * mean(g * x_hat, {-1}, true)) * rstd))
      c.diagnose(
          "your dx has the x̂ · mean(g · x̂) term but not mean(g): the mean depends on x "
          "too, dx = (g - mean(g) - x̂ · mean(g · x̂)) · rstd");
    else if (exercise::close(gx, r * w * rsqrt(mean(centered * centered, {-1}, true) + 1e-5f)))
      c.diagnose(
          "your dx treats the mean and the variance as constants (g · weight / std): both "
          "depend on x, which adds the two mean terms of the statement's formula "
          "(03_layer_norm.md)");
    return c.finish();
  }
  auto gc = gradcheck(
      [](const std::vector<Tensor>& in) { return LayerNormFunction::apply(in[0], in[1], in[2]); },
      {randn({2, 5}).requires_grad_(), (ones({5}) + 0.5f * randn({5})).requires_grad_(),
       randn({5}).requires_grad_()});
  c.check(gc.ok, "gradcheck against finite differences (x, weight, bias)", gc.message);
  return c.finish();
}
