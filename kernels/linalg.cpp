// matmul, linear and linear_gelu on the GEMM of gemm.cpp: fast kernels of the ops in
// autograd/linalg.cpp, which they must equal. They compute numbers; the ops record the nodes.
// Dimension letters: M rows of the left operand, K the contracted dim, N columns of the right.
#include <fmt/format.h>

#include "autograd/dispatch.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"
#include "kernels/frozen_weights.hpp"
#include "kernels/gelu_math.hpp"
#include "kernels/gemm.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

// Can dims [0, d] of `t` be walked as one dim with stride t.stride(d)?
bool collapsible(const Tensor& t, int64_t d) {
  for (int64_t i = 0; i < d; ++i)
    if (t.size(i) != 1 && t.stride(i) != t.stride(i + 1) * t.size(i + 1)) return false;
  return true;
}

// out[..., M, N] = a[..., M, K] · b[..., K, N] where a and b are views with identical batch
// dims (broadcast ones have stride 0) and out is contiguous: the product of matmul, which
// checks the shapes and records the gradient.
void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t nd = out.dim();
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  float* po = out.data();
  const float* pa = a.data();
  const float* pb = b.data();
  // One big GEMM when a's batch rows stack into one matrix and b has no batch (stride 0): the
  // common x[B, T, C] · W[C, N].
  bool b_shared = true;
  for (int64_t d = 0; d < nd - 2; ++d) b_shared = b_shared && (b.stride(d) == 0 || b.size(d) == 1);
  if (nd > 2 && b_shared && collapsible(a, nd - 2)) {
    gemm(out.numel() / N, N, K, pa, a.stride(-2), a.stride(-1), pb, b.stride(-2), b.stride(-1), po,
         N, false);
    return;
  }
  const int64_t batches = out.numel() / std::max<int64_t>(M * N, 1);
  std::vector<int64_t> off_a(batches), off_b(batches);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (int64_t d = nd - 3; d >= 0; --d) {
      const int64_t c = rem % out.size(d);
      rem /= out.size(d);
      oa += c * a.stride(d);
      ob += c * b.stride(d);
    }
    off_a[i] = oa;
    off_b[i] = ob;
  }
  // Many small products (attention heads): one thread per product. Few large ones: GEMM's own
  // threads inside each.
  const double flops =
      2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool per_batch = batches > 1 && flops < kParallelFlops &&
                         flops * static_cast<double>(batches) >= kParallelFlops;
  auto one = [&](int64_t i) {
    gemm(M, N, K, pa + off_a[i], a.stride(-2), a.stride(-1), pb + off_b[i], b.stride(-2),
         b.stride(-1), po + i * M * N, N, false);
  };
  if (per_batch) {
    parallel_for(batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) one(i);
  }
}

// h = x Wᵀ + b into a new tensor of x's shape with N last; with `act`, act(h) goes to act->out
// in the same pass, or, when act->out is null, over h itself (which is then act(h)).
Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const GemmActivation* act = nullptr) {
  const int64_t K = weight.size(1), N = weight.size(0);
  Tensor x2 =
      collapsible(x, x.dim() - 2 < 0 ? 0 : x.dim() - 2) ? x.detach() : x.contiguous().detach();
  const int64_t rows = x.numel() / std::max<int64_t>(K, 1);
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor out = empty(out_shape);
  // y = x Wᵀ + b: the GEMM adds b to each row as it writes it (Wᵀ read via strides).
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const int64_t rsx = x2.dim() >= 2 ? x2.stride(-2) : 0;
  GemmActivation in_place;
  if (act && !act->out) {
    in_place = {act->kind, out.data(), N};
    act = &in_place;
  }
  gemm(rows, N, K, x2.data(), rsx, x2.stride(-1), weight.data(), weight.stride(1), weight.stride(0),
       out.data(), N, false, frozen_packed_weight(weight, rows), bc.defined() ? bc.data() : nullptr,
       act);
  return out;
}

// linear's values, x Wᵀ + b, with no node: linear records its gradient itself.
Tensor fast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear_forward(x, weight, bias);
}

// gelu(x Wᵀ + b) and, when asked, the pre-activation h, which the backward needs. Without it
// (inference, an evaluation) GELU goes over the product's own result, which writes one [rows, N]
// result instead of two.
std::pair<Tensor, Tensor> fast_linear_gelu(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const std::string& approximate,
                                           bool keep_pre_activation) {
  const int64_t N = weight.size(0);
  GemmActivation act{.kind = approximate == "none" ? GemmActivation::Kind::GeluErf
                                                   : GemmActivation::Kind::GeluTanh,
                     .ldo = N};
  if (!keep_pre_activation) return {linear_forward(x, weight, bias, &act), Tensor()};
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor out = empty(out_shape);
  act.out = out.data();
  Tensor h = linear_forward(x, weight, bias, &act);
  return {out, h};
}

// dh = g ⊙ gelu'(h) as [rows, N], and with want_db, db = Σ_rows dh in the same pass: each chunk
// of rows sums its own, and the chunks' sums are added in chunk order (deterministic per thread
// count).
std::pair<Tensor, Tensor> fast_linear_gelu_backward(const Tensor& g, const Tensor& h,
                                                    const std::string& approximate, bool want_db) {
  const bool erf = approximate == "none";
  const int64_t N = h.size(-1), rows = h.numel() / std::max<int64_t>(N, 1);
  Tensor gc = g.contiguous();
  Tensor dh = empty({rows, N});
  const int64_t grain = std::max<int64_t>(1, simd::kGrain / std::max<int64_t>(N, 1));
  const int64_t chunks = parallel_chunks(rows, grain);
  std::vector<float> part(want_db ? chunks * N : 0, 0.0f);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t n = rows * c / chunks; n < rows * (c + 1) / chunks; ++n) {
        float* d = dh.data() + n * N;
        simd::map2_range(
            gc.data() + n * N, 1, h.data() + n * N, 1, d, N, [&](simd::batch gy, simd::batch hv) {
              return gy * (erf ? gelu_math::gelu_erf_grad(hv) : gelu_math::gelu_tanh_grad(hv));
            });
        if (want_db)
          simd::map2_range(part.data() + c * N, 1, d, 1, part.data() + c * N, N,
                           [](simd::batch acc, simd::batch v) { return acc + v; });
      }
  });
  Tensor db;
  if (want_db) {
    db = empty({N});
    simd::sum_rows(part.data(), chunks, N, db.data());
  }
  return {dh, db};
}

}  // namespace

void register_linalg_kernels() {
  register_kernel<void(const Tensor&, const Tensor&, const Tensor&)>("matmul", batched_gemm);
  register_kernel<Tensor(const Tensor&, const Tensor&, const Tensor&)>("linear", fast_linear);
  register_kernel<LinearGeluKernel>("linear_gelu", fast_linear_gelu);
  register_kernel<LinearGeluBackward>("linear_gelu_backward", fast_linear_gelu_backward);
}

}  // namespace anatomy
