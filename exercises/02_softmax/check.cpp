// Checker of exercise 02.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("02_softmax");
  const Tensor x = c.golden("x"), r = c.golden("grad_out"), want = c.golden("out");
  Tensor xg = x.clone().requires_grad_(), y;
  if (!c.run("forward runs", [&] { y = Softmax::apply(xg); })) return c.finish();
  if (!c.check(exercise::close(y, want), "forward equals torch.softmax(x, dim=-1)",
               exercise::compare(y, want))) {
    if (y.defined() && y.shape() == want.shape()) {
      const auto rows = sum(y, {-1}).to_vector();
      for (size_t i = 0; i < rows.size(); ++i)
        if (std::abs(rows[i] - 1.0f) > 1e-4f) {
          c.diagnose(
              fmt::format("row {} of your softmax sums to {:.2f}: softmax over the last "
                          "dimension? (each row of scores must become weights summing to 1)",
                          i, rows[i]));
          break;
        }
    }
    return c.finish();
  }
  // Scores near 100: exp overflows float32 unless the row's maximum is subtracted first.
  Tensor big;
  c.run("forward on large scores runs", [&] { big = Softmax::apply(x.detach() + 100.0f); });
  if (!c.check(big.defined() && exercise::close(big, want), "large scores give the same weights",
               big.defined() ? exercise::compare(big, want) : ""))
    c.diagnose(
        "with scores near 100 your weights are inf or NaN: exp overflows. Subtract each "
        "row's maximum before exp (the factor cancels in the ratio)");
  if (!c.run("backward runs", [&] { (y * r).sum().backward(); })) return c.finish();
  const Tensor got = xg.grad(), gwant = c.golden("grad_x");
  if (!c.check(exercise::close(got, gwant), "dL/dx equals PyTorch's",
               exercise::compare(got, gwant))) {
    if (exercise::close(got, r * want * (1.0f - want)))
      c.diagnose(
          "your backward uses only the diagonal of the Jacobian, y(1 - y): every output "
          "of a row depends on every input, dL/dx = y * (g - sum(g * y))");
    else if (exercise::close(got, r * want))
      c.diagnose(
          "your backward is y * g: it misses the term every output of the row shares, "
          "dL/dx = y * (g - sum(g * y)), the sum over the row's last dimension");
    return c.finish();
  }
  auto gc = gradcheck([](const std::vector<Tensor>& in) { return Softmax::apply(in[0]); },
                      {randn({2, 4}).requires_grad_()});
  c.check(gc.ok, "gradcheck against finite differences", gc.message);
  return c.finish();
}
