// The loops of an Adam or AdamW step on SIMD vectors, every parameter in one parallel loop: the
// fast kernel "adam" of nn/optimizer.cpp's `adam`, which it must equal element for element. The
// optimizer gathers the parameters, gradients and moment buffers and counts the steps; this
// updates the numbers.
#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/dispatch.hpp"
#include "autograd/tensor.hpp"
#include "kernels/for_each_segment.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

using simd::batch;

// f(p, g, m, v) -> updates p, m, v in place, for n elements; the last partial batch goes through
// stack buffers so every element gets the same instructions wherever a segment starts.
template <typename F>
void update4(float* p, const float* g, float* m, float* v, int64_t n, F f) {
  int64_t i = 0;
  for (; i + simd::W <= n; i += simd::W) {
    batch bp = batch::load_unaligned(p + i), bm = batch::load_unaligned(m + i);
    batch bv = batch::load_unaligned(v + i);
    f(bp, batch::load_unaligned(g + i), bm, bv);
    bp.store_unaligned(p + i);
    bm.store_unaligned(m + i);
    bv.store_unaligned(v + i);
  }
  if (i == n) return;
  alignas(64) float sp[simd::W] = {}, sg[simd::W] = {}, sm[simd::W] = {}, sv[simd::W] = {};
  const auto bytes = sizeof(float) * static_cast<size_t>(n - i);
  std::memcpy(sp, p + i, bytes);
  std::memcpy(sg, g + i, bytes);
  std::memcpy(sm, m + i, bytes);
  std::memcpy(sv, v + i, bytes);
  batch bp = batch::load_aligned(sp), bm = batch::load_aligned(sm), bv = batch::load_aligned(sv);
  f(bp, batch::load_aligned(sg), bm, bv);
  bp.store_aligned(sp);
  bm.store_aligned(sm);
  bv.store_aligned(sv);
  std::memcpy(p + i, sp, bytes);
  std::memcpy(m + i, sm, bytes);
  std::memcpy(v + i, sv, bytes);
}

// Every parameter updated in one loop (torch's foreach / multi-tensor form): a loop per
// parameter would run the many small ones on one core and pass over memory once per parameter.
void fast_adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
               const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
               const std::vector<double>& weight_decays, int64_t step, double lr, double beta1,
               double beta2, double eps, bool decoupled) {
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const batch b1(static_cast<float>(beta1)), a1(static_cast<float>(1.0 - beta1));
  const batch b2(static_cast<float>(beta2)), a2(static_cast<float>(1.0 - beta2));
  const batch step_size(static_cast<float>(lr / bc1));
  const batch bc2_sqrt(static_cast<float>(std::sqrt(bc2)));
  const batch e(static_cast<float>(eps));
  std::vector<int64_t> sizes;
  for (const Tensor& p : params) sizes.push_back(p.numel());
  for_each_segment(sizes, [&](size_t k, int64_t b, int64_t end) {
    const auto wd_k = static_cast<float>(weight_decays[k]);
    const batch wd(wd_k), decay(static_cast<float>(1.0 - lr * weight_decays[k]));
    const bool decays = wd_k != 0;
    update4(params[k].data() + b, grads[k].data() + b, exp_avgs[k].data() + b,
            exp_avg_sqs[k].data() + b, end - b, [&](batch& p, batch g, batch& m, batch& v) {
              if (decays && decoupled) p = p * decay;    // AdamW: p = p (1 - lr·wd)
              if (decays && !decoupled) g = g + p * wd;  // Adam's L2 decay: g' = g + wd·p
              m = m * b1 + g * a1;
              v = v * b2 + g * g * a2;
              p = p - step_size * m / (xsimd::sqrt(v) / bc2_sqrt + e);
            });
  });
}

}  // namespace

void register_optimizer_kernels() { register_kernel("adam", fast_adam); }

}  // namespace anatomy
