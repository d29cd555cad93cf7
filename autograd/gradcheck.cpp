#include "autograd/gradcheck.hpp"

#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/random.hpp"
#include "autograd/strided.hpp"

namespace anatomy {

namespace {

// L = Σ f(x) ⊙ r, accumulated in double so that the finite difference keeps its precision.
double loss_value(const Tensor& out, const std::vector<float>& r) {
  const auto v = out.to_vector();
  double l = 0.0;
  for (size_t i = 0; i < v.size(); ++i) l += static_cast<double>(v[i]) * r[i];
  return l;
}

// Storage offsets of every element of a (possibly strided) view, in row-major order.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offs;
  std::array<std::vector<int64_t>, 1> s{t.strides()};
  strided::for_each_run<1>(t.shape(), s, {0}, [&](auto off, int64_t n, auto inner) {
    for (int64_t i = 0; i < n; ++i) offs.push_back(off[0] + i * inner[0]);
  });
  return offs;
}

}  // namespace

GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  // Analytic: one backward of L.
  for (const auto& x : inputs)
    if (x.defined() && x.requires_grad()) x.zero_grad();
  Tensor out = f(inputs);
  if (!out.defined() || out.dtype() != Dtype::Float32)
    throw Error("gradcheck: the function must return a float32 tensor");
  Generator gen(options.seed + 12345);
  std::vector<float> r(out.numel());
  for (auto& v : r) v = gen.normal();
  if (!out.requires_grad()) {
    result.ok = false;
    result.message = "gradcheck: the output does not require grad (no input requires grad?)";
    return result;
  }
  Tensor rt = from_vector(r, out.shape());
  sum(mul(out, rt)).backward();

  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor g = x.grad();
    const std::vector<float> analytic =
        g.defined() ? g.to_vector() : std::vector<float>(x.numel(), 0.0f);
    float* base = x.data();
    const auto offs = element_offsets(x);
    for (size_t i = 0; i < offs.size(); ++i) {
      float& xi = base[offs[i]];
      const float orig = xi;
      xi = static_cast<float>(orig + options.eps);
      const double lp = loss_value(f(inputs), r);
      xi = static_cast<float>(orig - options.eps);
      const double lm = loss_value(f(inputs), r);
      xi = orig;
      const double numeric = (lp - lm) / (2.0 * options.eps);
      const double err = std::abs(numeric - analytic[i]);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (result.ok && !(err <= options.atol + options.rtol * std::abs(numeric))) {
        result.ok = false;
        result.message = fmt::format(
            "gradcheck: input {} (shape {}), element {}: backward gives {:.6f}, finite "
            "differences give {:.6f}",
            k, x.shape().str(), i, analytic[i], numeric);
      }
    }
  }
  return result;
}

}  // namespace anatomy
