#include "nn/clip_grad.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include "autograd/autograd.hpp"
#include "kernels/simd.hpp"
#include "nn/for_each_segment.hpp"

namespace anatomy::nn {

namespace {

// The larger of m and a, NaN once either is (as torch's infinity norm; std::max drops a NaN
// that comes second).
template <typename T>
T max_keeping_nan(T m, T a) {
  return std::isnan(a) || a > m ? a : m;
}

// max |x[i]|, NaN if any x[i] is NaN.
float max_abs(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = max_keeping_nan(m, std::fabs(x[i]));
  return m;
}

}  // namespace

float clip_grad_norm_(const std::vector<Tensor>& parameters, float max_norm, float norm_type) {
  const bool inf = std::isinf(norm_type);
  if (!inf && norm_type != 2.0f)
    throw Error(
        fmt::format("clip_grad_norm_: norm_type {} is not supported (2 or inf)", norm_type));
  NoGradGuard no_grad;
  std::vector<Tensor> grads, dense;
  std::vector<int64_t> sizes;
  for (const auto& p : parameters)
    if (p.grad().defined()) {
      grads.push_back(p.grad());
      dense.push_back(p.grad().contiguous());
      sizes.push_back(p.grad().numel());
    }
  if (grads.empty()) return 0.0f;
  // As torch: the norm of the per-tensor norms, each a float32 value. All the tensors go in one
  // parallel pass (for_each_segment): a product, a sum and a read-back per tensor would be dozens
  // of loops too small to split, run one after another on one core. A tensor's pieces are
  // combined in the order of their offsets, so the norm depends only on the thread count, as the
  // step's other reductions.
  std::vector<std::vector<std::pair<int64_t, float>>> pieces(grads.size());
  std::mutex pieces_mutex;
  for_each_segment(sizes, [&](size_t i, int64_t b, int64_t e) {
    const float* x = dense[i].data() + b;
    const float v = inf ? max_abs(x, e - b) : simd::dot(x, x, e - b);
    std::lock_guard lock(pieces_mutex);
    pieces[i].push_back({b, v});
  });
  double total = 0.0;
  for (auto& tensor_pieces : pieces) {
    std::sort(tensor_pieces.begin(), tensor_pieces.end());
    float v = 0.0f;  // the tensor's max |g|, or its Σ g²
    for (const auto& [begin, piece] : tensor_pieces)
      v = inf ? max_keeping_nan(v, piece) : v + piece;
    if (inf) {
      total = max_keeping_nan(total, static_cast<double>(v));
    } else {
      const float n = std::sqrt(v);
      total += static_cast<double>(n) * n;
    }
  }
  const float norm = inf ? static_cast<float>(total) : static_cast<float>(std::sqrt(total));
  const float coef = max_norm / (norm + 1e-6f);
  // As torch, which multiplies by min(coef, 1): a NaN norm makes every gradient NaN.
  if (!(coef < 1.0f) && !std::isnan(coef)) return norm;
  // The scaling, in one pass too. A gradient that is not contiguous (`dense` is then a copy) is
  // scaled where it lies, and so is one listed twice (torch then scales it twice): in the pass,
  // two chunks could scale the same values at once.
  std::vector<int64_t> in_pass(sizes.size(), 0);
  std::vector<size_t> alone;
  std::unordered_set<const float*> seen;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].is_contiguous() && seen.insert(grads[i].data()).second)
      in_pass[i] = sizes[i];
    else
      alone.push_back(i);
  }
  const simd::batch c(coef);
  for_each_segment(in_pass, [&](size_t i, int64_t b, int64_t e) {
    float* x = grads[i].data() + b;
    simd::map_range(x, x, e - b, [&](simd::batch v) { return v * c; });
  });
  for (size_t i : alone) grads[i].mul_(coef);
  return norm;
}

}  // namespace anatomy::nn
