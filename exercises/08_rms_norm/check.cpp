// Checker of exercise 08.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("08_rms_norm");
  const float eps = 0.1f;
  const Tensor x = c.golden("x"), w = c.golden("weight"), want = c.golden("out");
  Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_(), y;
  if (!c.run("the function runs", [&] { y = rms_norm(xg, wg, eps); })) return c.finish();
  if (!c.check(exercise::close(y, want), "the output equals LLaMA's RMSNorm in PyTorch",
               exercise::compare(y, want))) {
    NoGradGuard no_grad;
    const Tensor centered = x - mean(x, {-1}, true);
    if (exercise::close(y, centered * rsqrt(mean(centered * centered, {-1}, true) + eps) * w))
      c.diagnose(
          "you subtracted the mean (that is LayerNorm): RMSNorm does not subtract the mean, "
          "it only divides by the root mean square");
    else if (exercise::close(y, x / (sqrt(mean(x * x, {-1}, true)) + eps) * w))
      c.diagnose("eps belongs inside the square root: x * rsqrt(mean(x²) + eps), as LLaMA");
    else if (exercise::close(y, x * rsqrt(sum(x * x, {-1}, true) + eps) * w))
      c.diagnose(
          "you divided by the root of the sum of squares: RMSNorm divides by the root of their "
          "mean, sqrt(mean(x²) + eps), so the result does not shrink as the vector grows longer");
    else if (exercise::close(y, x * rsqrt(mean(x * x, {-1}, true) + eps)))
      c.diagnose("your output ignores weight: scale the normalized vector by it");
    return c.finish();
  }
  if (!c.run("backward runs", [&] { (y * c.golden("grad_out")).sum().backward(); }))
    return c.finish();
  c.check(exercise::close(xg.grad(), c.golden("grad_x")), "dL/dx equals PyTorch's",
          exercise::compare(xg.grad(), c.golden("grad_x")));
  c.check(exercise::close(wg.grad(), c.golden("pgrad.weight")), "dL/dweight equals PyTorch's",
          exercise::compare(wg.grad(), c.golden("pgrad.weight")));
  return c.finish();
}
