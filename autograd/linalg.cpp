// matmul, mm, bmm and linear: their shape rules, plain loops and gradients.
// Dimension letters: M rows of the left operand, K the contracted dim, N columns of the right.
#include <fmt/format.h>

#include <algorithm>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

namespace {

// out[g, M, N] = a[g, M, K] · b[g, K, N] for every batch g; a and b are contiguous with the same
// batch dims, out is contiguous and overwritten.
void batched_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const int64_t batches = out.numel() / std::max<int64_t>(M * N, 1);
  for (int64_t g = 0; g < batches; ++g) {
    const float* x = a.data() + g * M * K;
    const float* y = b.data() + g * K * N;
    float* z = out.data() + g * M * N;
    std::fill(z, z + M * N, 0.0f);
    // i, k, j: the inner loop walks a row of b and a row of the result, both contiguous.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const float xik = x[i * K + k];
        for (int64_t j = 0; j < N; ++j) z[i * N + j] += xik * y[k * N + j];
      }
  }
}

Tensor transpose_last(const Tensor& t) { return transpose(t, -1, -2); }

// t's values laid out contiguously: t itself, or a copy made with copy_, which records no op (a
// scratch copy is not a step of the computation that anomaly detection should name).
Tensor contiguous_values(const Tensor& t) {
  return t.is_contiguous() ? t.detach() : empty(t.shape()).copy_(t);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_float("matmul", a);
  check_float("matmul", b);
  if (a.dim() == 0 || b.dim() == 0)
    throw Error(
        fmt::format("matmul: both arguments need at least 1 dimension (got shapes {} and "
                    "{})",
                    a.shape().str(), b.shape().str()));
  // 1-D operands are promoted to matrices ([K] -> [1, K] on the left, [K, 1] on the right) and
  // the added dim is removed from the result, as torch.matmul does.
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t M = a2.size(-2), K = a2.size(-1), N = b2.size(-1);
  if (b2.size(-2) != K) {
    if (a.dim() <= 2 && b.dim() <= 2)
      throw Error(fmt::format("matmul: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                              a2.size(0), K, b2.size(0), N));
    throw Error(
        fmt::format("matmul: shapes {} and {} cannot be multiplied ({} != {} in the "
                    "contracted dimension)",
                    a.shape().str(), b.shape().str(), K, b2.size(-2)));
  }
  Shape sa(a2.shape().begin(), a2.shape().end() - 2), sb(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch = broadcast_shapes("matmul", sa, sb);
  Shape ea = batch, eb = batch, out_shape = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  out_shape.insert(out_shape.end(), {M, N});
  Tensor out = empty(out_shape);
  // The fast kernel reads the broadcast views in place (a stride-0 dim is read again, not
  // copied); the reference lays them out contiguously first.
  using BatchedProduct = void(const Tensor&, const Tensor&, const Tensor&);
  if (auto fast = fast_kernel<BatchedProduct>("matmul"))
    fast(expand(a2.detach(), ea), expand(b2.detach(), eb), out);
  else
    batched_matmul(contiguous_values(expand(a2, ea)), contiguous_values(expand(b2, eb)), out);
  Shape final_shape = out_shape;
  if (b.dim() == 1) final_shape.erase(final_shape.end() - 1);
  if (a.dim() == 1) final_shape.erase(final_shape.end() - (b.dim() == 1 ? 1 : 2));
  if (final_shape != out_shape) out = out.view(final_shape);
  const char* name = a.dim() == 1 && b.dim() == 1 ? "DotBackward0"
                     : out_shape.size() > 2       ? "BmmBackward0"
                                                  : "MmBackward0";
  return record(out, name, {a, b}, [a, b, a2, b2, out_shape](const Tensor& g) {
    Tensor g2 = g.reshape(out_shape);
    Tensor ga, gb;
    // C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC, each summed over the batch dims it was broadcast on.
    if (a.requires_grad())
      ga = sum_to(matmul(g2, transpose_last(b2.detach())), a2.shape()).reshape(a.shape());
    if (b.requires_grad()) {
      if (b2.dim() == 2 && a2.dim() > 2)  // b shared by every batch: one [K, rows]·[rows, N]
        gb = matmul(transpose_last(a2.detach().reshape({-1, a2.size(-1)})),
                    g2.reshape({-1, g2.size(-1)}));
      else
        gb = sum_to(matmul(transpose_last(a2.detach()), g2), b2.shape());
      gb = gb.reshape(b.shape());
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Tensor mm(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2)
    throw Error(fmt::format("mm: self must be a matrix (got shape {})", a.shape().str()));
  if (b.dim() != 2)
    throw Error(fmt::format("mm: mat2 must be a matrix (got shape {})", b.shape().str()));
  return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (a.dim() != 3)
    throw Error(fmt::format("bmm: batch1 must be a 3D tensor (got shape {})", a.shape().str()));
  if (b.dim() != 3)
    throw Error(fmt::format("bmm: batch2 must be a 3D tensor (got shape {})", b.shape().str()));
  if (b.size(0) != a.size(0) || b.size(1) != a.size(2))
    throw Error(
        fmt::format("bmm: Expected size for first two dimensions of batch2 tensor to be: "
                    "[{}, {}] but got: [{}, {}].",
                    a.size(0), a.size(2), b.size(0), b.size(1)));
  return matmul(a, b);
}

namespace {

// linear's argument checks, shared by linear_gelu (each message names the op).
void check_linear(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_float(op, x);
  check_float(op, weight);
  if (weight.dim() != 2)
    throw Error(fmt::format("{}: weight must be 2-D [out_features, in_features] (got {})", op,
                            weight.shape().str()));
  if (x.dim() == 0) throw Error(fmt::format("{}: input must have at least 1 dimension", op));
  const int64_t K = weight.size(1), N = weight.size(0);
  if (x.size(-1) != K)
    throw Error(fmt::format("{}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", op,
                            x.numel() / std::max<int64_t>(x.size(-1), 1), x.size(-1), K, N));
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != N))
    throw Error(fmt::format("{}: bias must have shape [{}] (got {})", op, N, bias.shape().str()));
}

// dx = g W, dW = gᵀ x for y = x Wᵀ (+ b), g of shape [rows, N].
std::vector<Tensor> linear_backward(const Tensor& g2, const Tensor& x, const Tensor& weight,
                                    int64_t rows, int64_t K) {
  Tensor gx, gw;
  if (x.requires_grad()) gx = mm(g2, weight.detach()).reshape(x.shape());
  if (weight.requires_grad()) gw = mm(g2.t(), x.detach().reshape({rows, K}));
  return {gx, gw};
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_linear("linear", x, weight, bias);
  const int64_t K = weight.size(1), N = weight.size(0);
  int64_t rows = 1;  // every dim of x but the last
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  // The fast kernel computes the values (one GEMM that adds b as it writes); the gradient below
  // is the same for both.
  using LinearValues = Tensor(const Tensor&, const Tensor&, const Tensor&);
  Tensor out;
  if (auto fast = fast_kernel<LinearValues>("linear")) {
    out = fast(x, weight, bias);
  } else {
    // y = x Wᵀ + b: (rows, K) x (K, N), then b added to every row.
    Shape out_shape = x.shape();
    out_shape.back() = N;
    out = zeros(out_shape);
    const Tensor w = contiguous_values(weight);
    Tensor wt = empty({K, N});  // Wᵀ, so that the product's inner loop reads it row by row
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) wt.data()[k * N + n] = w.data()[n * K + k];
    if (out.numel() > 0 && K > 0)
      batched_matmul(contiguous_values(x).view({rows, K}), wt, out.view({rows, N}));
    if (bias.defined()) {
      const Tensor bc = bias.contiguous();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = 0; n < N; ++n) out.data()[r * N + n] += bc.data()[n];
    }
  }
  return record(out, "AddmmBackward0", {x, weight, bias},
                [x, weight, bias, rows, K, N](const Tensor& g) {
                  Tensor g2 = g.reshape({rows, N});
                  std::vector<Tensor> grads = linear_backward(g2, x, weight, rows, K);
                  if (bias.defined() && bias.requires_grad())
                    grads.push_back(sum(g2, {0}));  // db = Σ_rows g
                  else
                    grads.push_back(Tensor());
                  return grads;
                });
}

// gelu(linear(x, weight, bias)). With the fast kernel, one pass over the output and one node:
// dh = g ⊙ gelu'(h) for the pre-activation h, then linear's gradient of dh.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const std::string& approximate) {
  check_linear("linear_gelu", x, weight, bias);
  if (approximate != "none" && approximate != "tanh")
    throw Error(fmt::format(
        "linear_gelu: approximate argument must be either none or tanh (got '{}')", approximate));
  auto fast = fast_kernel<LinearGeluKernel>("linear_gelu");
  auto fast_backward = fast_kernel<LinearGeluBackward>("linear_gelu_backward");
  if (!fast || !fast_backward) return gelu(linear(x, weight, bias), approximate);
  const bool want_db = bias.defined() && bias.requires_grad();
  const bool graph = is_grad_enabled() && (x.requires_grad() || weight.requires_grad() || want_db);
  const auto [out, h] = fast(x, weight, bias, approximate, graph);
  const int64_t K = weight.size(1), rows = x.numel() / std::max<int64_t>(K, 1);
  return record(
      out, "AddmmActivationBackward0", {x, weight, bias},
      [x, weight, bias, h = h, approximate, want_db, rows, K, fast_backward](const Tensor& g) {
        auto [dh, db] = fast_backward(g, h, approximate, want_db);
        std::vector<Tensor> grads = linear_backward(dh, x, weight, rows, K);
        grads.push_back(db);  // db = Σ_rows dh
        return grads;
      });
}

}  // namespace anatomy
