#include "nn/clip_grad.hpp"

#include <cmath>
#include <limits>

#include "autograd/autograd.hpp"

namespace anatomy::nn {

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
  // As torch: the norm of the per-tensor norms (each a float32 reduction).
  double total = 0.0;
  for (const auto& g : grads) {
    if (inf) {
      total = std::max(total, static_cast<double>(abs(g).max().item()));
    } else {
      const float n = std::sqrt((g * g).sum().item());
      total += static_cast<double>(n) * n;
    }
  }
  const float norm = inf ? static_cast<float>(total) : static_cast<float>(std::sqrt(total));
  const float coef = max_norm / (norm + 1e-6f);
  if (coef < 1.0f)
    for (auto& g : grads) g.mul_(coef);
  return norm;
}

}  // namespace anatomy::nn
