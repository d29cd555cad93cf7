// The loops of clip_grad_norm_ (nn/clip_grad.cpp) over every gradient at once: the fast kernels
// "_foreach_norm" (each tensor's norm) and "_foreach_mul_" (each tensor scaled in place), which
// must equal nn/clip_grad.cpp's foreach_norm and foreach_mul_.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "autograd/dispatch.hpp"
#include "autograd/tensor.hpp"
#include "kernels/for_each_segment.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

// The larger of m and a, NaN once either is (as torch's infinity norm; std::max drops a NaN
// that comes second).
float max_keeping_nan(float m, float a) { return std::isnan(a) || a > m ? a : m; }

// max |x[i]|, NaN if any x[i] is NaN.
float max_abs(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = max_keeping_nan(m, std::fabs(x[i]));
  return m;
}

// All the tensors go in one parallel pass (for_each_segment): a product, a sum and a read-back
// per tensor would be dozens of loops too small to split, run one after another on one core. A
// tensor's pieces are combined in the order of their offsets, so the norm depends only on the
// thread count, as the step's other reductions.
std::vector<float> fast_foreach_norm(const std::vector<Tensor>& tensors, bool inf) {
  std::vector<Tensor> dense;
  std::vector<int64_t> sizes;
  for (const Tensor& t : tensors) {
    dense.push_back(t.contiguous());
    sizes.push_back(t.numel());
  }
  std::vector<std::vector<std::pair<int64_t, float>>> pieces(tensors.size());
  std::mutex pieces_mutex;
  for_each_segment(sizes, [&](size_t i, int64_t b, int64_t e) {
    const float* x = dense[i].data() + b;
    const float v = inf ? max_abs(x, e - b) : simd::dot(x, x, e - b);
    std::lock_guard lock(pieces_mutex);
    pieces[i].push_back({b, v});
  });
  std::vector<float> norms;
  for (auto& tensor_pieces : pieces) {
    std::sort(tensor_pieces.begin(), tensor_pieces.end());
    float v = 0.0f;  // the tensor's max |x|, or its Σ x²
    for (const auto& [begin, piece] : tensor_pieces)
      v = inf ? max_keeping_nan(v, piece) : v + piece;
    norms.push_back(inf ? v : std::sqrt(v));
  }
  return norms;
}

// The scaling in one pass too. A tensor that is not contiguous is scaled where it lies, and so is
// one listed twice (torch then scales it twice): in the pass, two chunks could scale the same
// values at once.
void fast_foreach_mul_(const std::vector<Tensor>& tensors, float scalar) {
  std::vector<int64_t> in_pass(tensors.size(), 0);
  std::vector<size_t> alone;
  std::unordered_set<const float*> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].is_contiguous() && seen.insert(tensors[i].data()).second)
      in_pass[i] = tensors[i].numel();
    else
      alone.push_back(i);
  }
  const simd::batch c(scalar);
  for_each_segment(in_pass, [&](size_t i, int64_t b, int64_t e) {
    float* x = tensors[i].data() + b;
    simd::map_range(x, x, e - b, [&](simd::batch v) { return v * c; });
  });
  for (size_t i : alone) {
    Tensor t = tensors[i];
    t.mul_(scalar);
  }
}

}  // namespace

void register_clip_grad_kernels() {
  register_kernel("_foreach_norm", fast_foreach_norm);
  register_kernel("_foreach_mul_", fast_foreach_mul_);
}

}  // namespace anatomy
