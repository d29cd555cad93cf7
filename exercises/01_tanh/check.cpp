// Checker of exercise 01.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("01_tanh");
  const Tensor x = c.golden("x"), r = c.golden("grad_out");
  Tensor xg = x.clone().requires_grad_(), y;
  if (!c.run("forward runs", [&] { y = Tanh::apply(xg); })) return c.finish();
  c.check(exercise::close(y, c.golden("out")), "forward equals torch.tanh",
          exercise::compare(y, c.golden("out")));
  if (!c.run("backward runs", [&] { (y * r).sum().backward(); })) return c.finish();
  const Tensor want = c.golden("grad_x"), got = xg.grad();
  if (c.check(exercise::close(got, want), "dL/dx equals PyTorch's", exercise::compare(got, want))) {
    auto gc = gradcheck([](const std::vector<Tensor>& in) { return Tanh::apply(in[0]); },
                        {(0.5f * randn({2, 3})).requires_grad_()});
    c.check(gc.ok, "gradcheck against finite differences", gc.message);
    return c.finish();
  }
  // The usual mistakes, recognized by the gradient they give.
  const Tensor t = tanh(x);
  if (exercise::close(got, r * (1.0f - x * x)))
    c.diagnose(
        "your backward computes 1 - x² where tanh' is 1 - tanh(x)²: save the output y in "
        "forward and use 1 - y²");
  else if (exercise::close(got, r * (1.0f - t)))
    c.diagnose(
        "your backward computes 1 - tanh(x), without the square: tanh' is 1 - tanh(x)², "
        "so use 1 - y * y");
  else if (exercise::close(got, 1.0f - t * t))
    c.diagnose(
        "your backward returns tanh'(x) alone: multiply by grad (the chain rule, "
        "dL/dx = dL/dy · dy/dx)");
  return c.finish();
}
