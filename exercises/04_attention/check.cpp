// Checker of exercise 04.
#include "common/checker.hpp"
#include "exercise.hpp"

using namespace anatomy;

int main() {
  exercise::Checker c("04_attention");
  const Tensor q = c.golden("q"), k = c.golden("k"), v = c.golden("v"), mask = c.golden("mask");
  const Tensor want_w = c.golden("weights"), want = c.golden("out"), r = c.golden("grad_out");
  Tensor qg = q.clone().requires_grad_(), kg = k.clone().requires_grad_(),
         vg = v.clone().requires_grad_(), out, w;
  if (!c.run("the function runs", [&] {
        auto [o, weights] = scaled_dot_product_attention(qg, kg, vg, mask);
        out = o, w = weights;
      }))
    return c.finish();
  if (!c.check(exercise::close(w, want_w), "the weights equal PyTorch's",
               exercise::compare(w, want_w))) {
    if (w.defined() && w.shape() == want_w.shape()) {
      NoGradGuard no_grad;
      const auto rows = sum(w, {-1}).to_vector();
      const Tensor scores = matmul(q, k.transpose(-2, -1));
      // The weight on hidden keys (NaN rows, all of whose keys a wrong mask hid, count as none).
      const auto wv = w.to_vector(), hv = eq(mask, 0.0f).to(kFloat32).expand(w.shape()).to_vector();
      float on_hidden = 0;
      for (size_t i = 0; i < wv.size(); ++i)
        if (std::isfinite(wv[i])) on_hidden += wv[i] * hv[i];
      if (on_hidden > 1e-3f) {
        c.diagnose(
            fmt::format("your weights put {:.2f} in all on keys the mask hides: mask == 0 "
                        "means hidden (fill those scores with -inf)",
                        on_hidden));
        return c.finish();
      }
      // The mask applied after the softmax: hidden keys get 0 (or -inf), and the weights left
      // no longer sum to 1.
      const float d = std::sqrt(static_cast<float>(q.size(-1)));
      const Tensor late = softmax(scores / d, -1);
      for (const float fill : {0.0f, -INFINITY})
        if (exercise::close(clamp(w, -1.0f, 2.0f),  // -inf compared as -1
                            clamp(masked_fill(late, eq(mask, 0.0f), fill), -1.0f, 2.0f))) {
          c.diagnose(
              "you applied the mask after the softmax: the weights left no longer sum to 1. "
              "Fill the hidden keys' scores with -inf before the softmax, which then gives them "
              "0 and shares the whole row among the visible keys");
          return c.finish();
        }
      for (size_t i = 0; i < rows.size(); ++i)
        if (std::abs(rows[i] - 1.0f) > 1e-3f) {
          c.diagnose(
              fmt::format("row {} of your attention weights sums to {:.2f}: softmax over "
                          "the last dimension (the keys)?",
                          i, rows[i]));
          return c.finish();
        }
      if (exercise::close(w, softmax(masked_fill(scores, eq(mask, 0.0f), -INFINITY), -1), 1e-3f))
        c.diagnose(fmt::format("scores are {:.0f}x too large: did you divide by sqrt(d_k)?",
                               std::sqrt(static_cast<float>(q.size(-1)))));
    }
    return c.finish();
  }
  c.check(exercise::close(out, want), "the output equals PyTorch's", exercise::compare(out, want));
  if (!c.run("backward runs", [&] { (out * r).sum().backward(); })) return c.finish();
  for (const auto& [name, t] : {std::pair{"q", qg}, std::pair{"k", kg}, std::pair{"v", vg}})
    c.check(exercise::close(t.grad(), c.golden(std::string("grad_") + name)),
            fmt::format("dL/d{} equals PyTorch's", name),
            exercise::compare(t.grad(), c.golden(std::string("grad_") + name)));
  return c.finish();
}
