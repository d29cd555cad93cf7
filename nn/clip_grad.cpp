#include "nn/clip_grad.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include "autograd/autograd.hpp"
#include "autograd/dispatch.hpp"

namespace anatomy::nn {

namespace {

// The larger of m and a, NaN once either is (as torch's infinity norm; std::max drops a NaN
// that comes second).
template <typename T>
T max_keeping_nan(T m, T a) {
  return std::isnan(a) || a > m ? a : m;
}

// The norm of each tensor, a float32 value as torch._foreach_norm gives: √(Σ x²), or max |x|
// for the infinity norm (NaN if any x is NaN). Σ x² is summed in double: a float running sum
// over a million values drifts further than torch's (and the fast kernel's) vector of partial
// sums. Fast kernel: kernels/clip_grad.cpp.
std::vector<float> foreach_norm(const std::vector<Tensor>& tensors, bool inf) {
  std::vector<float> norms;
  for (const Tensor& t : tensors) {
    const Tensor dense = t.contiguous();
    const float* x = dense.data();
    double v = 0.0;  // max |x|, or Σ x²
    for (int64_t i = 0; i < dense.numel(); ++i) {
      const double xi = x[i];
      v = inf ? max_keeping_nan(v, std::fabs(xi)) : v + xi * xi;
    }
    norms.push_back(static_cast<float>(inf ? v : std::sqrt(v)));
  }
  return norms;
}

// Each tensor times `scalar`, in place, as torch._foreach_mul_: a tensor listed twice is scaled
// twice. Fast kernel: kernels/clip_grad.cpp.
void foreach_mul_(const std::vector<Tensor>& tensors, float scalar) {
  for (Tensor t : tensors) t.mul_(scalar);
}

}  // namespace

float clip_grad_norm_(const std::vector<Tensor>& parameters, float max_norm, float norm_type) {
  const bool inf = std::isinf(norm_type);
  if (!inf && norm_type != 2.0f)
    throw Error(
        fmt::format("clip_grad_norm_: norm_type {} is not supported (2 or inf)", norm_type));
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0f;
  auto norms_of = foreach_norm;
  if (auto fast = fast_kernel<decltype(foreach_norm)>("_foreach_norm")) norms_of = fast;
  // As torch: the norm of the per-tensor norms, summed in double.
  double total = 0.0;
  for (const float n : norms_of(grads, inf))
    total =
        inf ? max_keeping_nan(total, static_cast<double>(n)) : total + static_cast<double>(n) * n;
  const float norm = inf ? static_cast<float>(total) : static_cast<float>(std::sqrt(total));
  const float coef = max_norm / (norm + 1e-6f);
  // As torch, which multiplies by min(coef, 1): a NaN norm makes every gradient NaN.
  if (!(coef < 1.0f) && !std::isnan(coef)) return norm;
  auto scale = foreach_mul_;
  if (auto fast = fast_kernel<decltype(foreach_mul_)>("_foreach_mul_")) scale = fast;
  scale(grads, coef);
  return norm;
}

}  // namespace anatomy::nn
