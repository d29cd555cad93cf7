// The composite ops of torch.nn.functional: softmax, log_softmax, layer_norm, dropout,
// embedding, cross_entropy, each written out plainly with its backward beside it. A fast kernel
// (dispatch.hpp) may fill the numbers of a forward or a backward; the nodes are recorded here.
//
// Dimension letters: N rows, C the dim being normalized (classes, features).
#include <fmt/format.h>

#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/random.hpp"

namespace anatomy {

namespace {

// t with `dim` moved last, as contiguous [N, C] rows (moved back by the same call).
Tensor dim_last(const Tensor& t, int64_t dim) {
  const bool last = dim == t.dim() - 1 || t.dim() == 0;
  return last ? t.detach().contiguous() : transpose(t.detach(), dim, -1).contiguous();
}
int64_t row_size(const Tensor& t) { return t.dim() == 0 ? 1 : t.size(-1); }

// fn(x_row, y_row, C) over every row of `a` along `dim`, or the fast kernel registered as
// `kernel` when fast kernels are chosen.
template <typename F>
Tensor per_row(const char* kernel, const Tensor& a, int64_t dim, F fn) {
  if (auto fast = fast_kernel<Tensor(const Tensor&, int64_t)>(kernel)) return fast(a, dim);
  Tensor x = dim_last(a, dim), y = empty(x.shape());
  const int64_t C = row_size(x), N = C == 0 ? 0 : x.numel() / C;
  for (int64_t n = 0; n < N; ++n) fn(x.data() + n * C, y.data() + n * C, C);
  return dim_last(y, dim);
}

// fn(g_row, y_row, dx_row, C) likewise for a backward that reads the op's output y.
template <typename F>
Tensor per_row_grad(const char* kernel, const Tensor& g, const Tensor& y, int64_t dim, F fn) {
  if (auto fast = fast_kernel<Tensor(const Tensor&, const Tensor&, int64_t)>(kernel))
    return fast(g, y, dim);
  Tensor gr = dim_last(g, dim), yr = dim_last(y, dim), dx = empty(gr.shape());
  const int64_t C = row_size(gr), N = C == 0 ? 0 : gr.numel() / C;
  for (int64_t n = 0; n < N; ++n) fn(gr.data() + n * C, yr.data() + n * C, dx.data() + n * C, C);
  return dim_last(dx, dim);
}

// The largest value of a row, and log Σ e^x with it subtracted first, so that exp never overflows.
float row_max(const float* x, int64_t C) {
  float m = -INFINITY;
  for (int64_t c = 0; c < C; ++c) m = std::max(m, x[c]);
  return m;
}
float row_logsumexp(const float* x, int64_t C) {
  const float m = row_max(x, C);
  if (std::isinf(m)) return m;
  float s = 0.0f;
  for (int64_t c = 0; c < C; ++c) s += std::exp(x[c] - m);
  return m + std::log(s);
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t dim) {
  check_float("softmax", a);
  dim = wrap_dim("softmax", dim, a.dim());
  Tensor out = per_row("softmax", a, dim, [](const float* x, float* y, int64_t C) {
    const float m = row_max(x, C);  // subtracting the max keeps exp() from overflowing
    float total = 0.0f;
    for (int64_t c = 0; c < C; ++c) total += y[c] = std::exp(x[c] - m);
    for (int64_t c = 0; c < C; ++c) y[c] /= total;
  });
  return record(out, "SoftmaxBackward0", {a}, [y = out.detach(), dim](const Tensor& g) {
    // dx = y ⊙ (g - Σ g ⊙ y), the softmax Jacobian-vector product per row.
    return std::vector<Tensor>{per_row_grad(
        "softmax_backward", g, y, dim, [](const float* gr, const float* yr, float* dx, int64_t C) {
          float dot = 0.0f;
          for (int64_t c = 0; c < C; ++c) dot += gr[c] * yr[c];
          for (int64_t c = 0; c < C; ++c) dx[c] = yr[c] * (gr[c] - dot);
        })};
  });
}

Tensor log_softmax(const Tensor& a, int64_t dim) {
  check_float("log_softmax", a);
  dim = wrap_dim("log_softmax", dim, a.dim());
  Tensor out = per_row("log_softmax", a, dim, [](const float* x, float* y, int64_t C) {
    const float lse = row_logsumexp(x, C);  // y = x - log Σ e^x
    for (int64_t c = 0; c < C; ++c) y[c] = x[c] - lse;
  });
  return record(out, "LogSoftmaxBackward0", {a}, [y = out.detach(), dim](const Tensor& g) {
    // dx = g - e^y Σ g
    return std::vector<Tensor>{
        per_row_grad("log_softmax_backward", g, y, dim,
                     [](const float* gr, const float* yr, float* dx, int64_t C) {
                       float total = 0.0f;
                       for (int64_t c = 0; c < C; ++c) total += gr[c];
                       for (int64_t c = 0; c < C; ++c) dx[c] = gr[c] - std::exp(yr[c]) * total;
                     })};
  });
}

namespace {

void check_layer_norm(const char* op, const Tensor& x, const Shape& normalized_shape,
                      const Tensor& weight, const Tensor& bias) {
  check_float(op, x);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0)
    throw Error(fmt::format(
        "{}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
        "least one element, but got normalized_shape = []",
        op));
  bool ok = x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == normalized_shape[i];
  if (!ok)
    throw Error(fmt::format(
        "{}: Given normalized_shape={}, expected input with shape "
        "[*, {}], but got input of size{}",
        op, normalized_shape.str(),
        normalized_shape.str().substr(1, normalized_shape.str().size() - 2), x.shape().str()));
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && p->shape() != normalized_shape)
      throw Error(fmt::format("{}: Expected weight and bias to be of shape {} but got {}", op,
                              normalized_shape.str(), p->shape().str()));
}

// x̂ = (x - mean) / σ with σ = √(var + eps) (the biased variance), y = x̂ w + b, over N rows of C
// values of the contiguous x; x̂ and 1/σ of each row are kept for the backward.
LayerNormSaved layer_norm_rows(const Tensor& x, int64_t N, int64_t C, const Tensor& weight,
                               const Tensor& bias, float eps) {
  const Tensor w = weight.defined() ? weight.contiguous() : ones({C});
  const Tensor b = bias.defined() ? bias.contiguous() : zeros({C});
  LayerNormSaved s{empty(x.shape()), empty(x.shape()), empty({N})};
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = x.data() + n * C;
    float mean = 0.0f, var = 0.0f;
    for (int64_t c = 0; c < C; ++c) mean += xr[c];
    mean /= static_cast<float>(C);
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<float>(C);
    const float r = s.rstd.data()[n] = 1.0f / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c) {
      const float h = s.xhat.data()[n * C + c] = (xr[c] - mean) * r;
      s.out.data()[n * C + c] = h * w.data()[c] + b.data()[c];
    }
  }
  return s;
}

// Layer norm's backward over N rows of C values: {dx, dw, db}.
std::vector<Tensor> layer_norm_grad_rows(const Tensor& g, const Tensor& xhat, const Tensor& rstd,
                                         const Tensor& weight, const Tensor& bias, int64_t N,
                                         int64_t C) {
  const Tensor gc = g.contiguous(), w = weight.defined() ? weight.contiguous() : ones({C});
  Tensor gx = empty(g.shape()), gw = weight.defined() ? zeros(weight.shape()) : Tensor();
  Tensor gb = bias.defined() ? zeros(bias.shape()) : Tensor();
  for (int64_t n = 0; n < N; ++n) {
    const float* gr = gc.data() + n * C;
    const float* hr = xhat.data() + n * C;
    // ĝ = g ⊙ w = dL/dx̂; then dx = (1/σ) (ĝ - mean(ĝ) - x̂ mean(ĝ ⊙ x̂))
    float m1 = 0.0f, m2 = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      const float gh = gr[c] * w.data()[c];
      m1 += gh;
      m2 += gh * hr[c];
    }
    m1 /= static_cast<float>(C);
    m2 /= static_cast<float>(C);
    for (int64_t c = 0; c < C; ++c) {
      const float gh = gr[c] * w.data()[c];
      gx.data()[n * C + c] = rstd.data()[n] * (gh - m1 - hr[c] * m2);
      if (gw.defined()) gw.data()[c] += gr[c] * hr[c];  // dw = Σ_rows g ⊙ x̂
      if (gb.defined()) gb.data()[c] += gr[c];          // db = Σ_rows g
    }
  }
  return {gx, gw, gb};
}

// Records layer norm's node on s.out, with x, weight and bias its inputs.
Tensor record_layer_norm(const LayerNormSaved& s, const Tensor& x, const Tensor& weight,
                         const Tensor& bias, int64_t N, int64_t C) {
  return record(s.out, "NativeLayerNormBackward0", {x, weight, bias},
                [xhat = s.xhat, rstd = s.rstd, weight, bias, N, C](const Tensor& g) {
                  auto fast = fast_kernel<LayerNormBackward>("layer_norm_backward");
                  return (fast ? fast : layer_norm_grad_rows)(g, xhat, rstd, weight, bias, N, C);
                });
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, float eps) {
  check_layer_norm("layer_norm", x, normalized_shape, weight, bias);
  const int64_t C = numel_of(normalized_shape), N = C == 0 ? 0 : x.numel() / C;
  auto fast = fast_kernel<LayerNormKernel>("layer_norm");
  return record_layer_norm((fast ? fast : layer_norm_rows)(x.contiguous(), N, C, weight, bias, eps),
                           x, weight, bias, N, C);
}

Tensor dropout(const Tensor& x, float p, bool training) {
  check_float("dropout", x);
  if (p < 0.0f || p > 1.0f)
    throw Error(
        fmt::format("dropout: dropout probability has to be between 0 and 1, but got {}", p));
  if (!training || p == 0.0f) return x;
  // Keep each element with probability 1-p and scale it by 1/(1-p), so the expected value is
  // unchanged and eval mode needs no rescaling. One uniform draw per element, in element order.
  const float scale = p == 1.0f ? 0.0f : 1.0f / (1.0f - p);
  Tensor xc = x.contiguous();
  Tensor mask = empty(x.shape()), out = empty(x.shape());
  if (auto fast = fast_kernel<DropoutKernel>("dropout")) {
    fast(xc, p, scale, mask, out);
  } else {
    Generator& gen = default_generator();
    for (int64_t i = 0; i < x.numel(); ++i) {
      mask.data()[i] = gen.uniform() >= p ? scale : 0.0f;
      out.data()[i] = xc.data()[i] * mask.data()[i];
    }
  }
  return record(out, "NativeDropoutBackward0", {x},
                [mask](const Tensor& g) { return std::vector<Tensor>{mul(g, mask)}; });
}

DropoutAddLayerNorm dropout_add_layer_norm(const Tensor& x, const Tensor& residual, float p,
                                           bool training, const Shape& normalized_shape,
                                           const Tensor& weight, const Tensor& bias, float eps) {
  check_float("dropout_add_layer_norm", residual);
  if (x.shape() != residual.shape())
    throw Error(fmt::format(
        "dropout_add_layer_norm: x and residual must have the same shape (got {} and {})",
        x.shape().str(), residual.shape().str()));
  check_layer_norm("dropout_add_layer_norm", x, normalized_shape, weight, bias);
  if (p < 0.0f || p > 1.0f)
    throw Error(fmt::format(
        "dropout_add_layer_norm: dropout probability has to be between 0 and 1, but got {}", p));
  auto fast = fast_kernel<DropoutAddLayerNormKernel>("dropout_add_layer_norm");
  if (!fast) {
    Tensor sum = add(residual, dropout(x, p, training));
    return {sum, layer_norm(sum, normalized_shape, weight, bias, eps)};
  }
  // The fused pass records the two nodes the composed ops would: sum, then its norm.
  const int64_t C = numel_of(normalized_shape), N = C == 0 ? 0 : x.numel() / C;
  DropoutAddSaved s = fast(x, residual, p, training, N, C, weight, bias, eps);
  Tensor sum =
      record(s.sum, "DropoutAddBackward0", {x, residual}, [mask = s.mask](const Tensor& g) {
        return std::vector<Tensor>{mask.defined() ? mul(g, mask) : g, g};  // d/dx = mask, d/dr = 1
      });
  return {sum, record_layer_norm(s.norm, sum, weight, bias, N, C)};
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  if (indices.dtype() != Dtype::Int64)
    throw Error(
        fmt::format("embedding: Expected tensor for argument #1 'indices' to have scalar "
                    "type Long; but got Float (shape {})",
                    indices.shape().str()));
  check_float("embedding", weight);
  if (weight.dim() != 2)
    throw Error(
        fmt::format("embedding: 'weight' must be 2-D (got shape {})", weight.shape().str()));
  const int64_t V = weight.size(0), D = weight.size(1);
  const auto ids = indices.to_int_vector();
  check_ids(ids, V, [&](int64_t id) {
    return fmt::format("embedding: index {} is out of range for the table of {} rows (weight {})",
                       id, V, weight.shape().str());
  });
  Shape shape = indices.shape();
  shape.push_back(D);
  Tensor w = weight.contiguous();
  Tensor out = empty(shape);
  for (size_t i = 0; i < ids.size(); ++i)
    std::copy_n(w.data() + ids[i] * D, D, out.data() + static_cast<int64_t>(i) * D);
  return record(out, "EmbeddingBackward0", {weight}, [ids, V, D, padding_idx](const Tensor& g) {
    // Each row's gradient is the sum of the gradients of every position that used it.
    Tensor gw = zeros({V, D});
    Tensor gc = g.contiguous();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (padding_idx && ids[i] == *padding_idx) continue;
      float* dst = gw.data() + ids[i] * D;
      const float* src = gc.data() + static_cast<int64_t>(i) * D;
      for (int64_t d = 0; d < D; ++d) dst[d] += src[d];
    }
    return std::vector<Tensor>{gw};
  });
}

namespace {

// Checks the arguments; returns the logits as rows [N, C]: [C] -> [1, C]; [N, C, d...] ->
// [N·d..., C], rows in the target's row-major order. The view ops keep the graph, so the
// gradient in rows flows back to the logits' shape by itself.
Tensor cross_entropy_input(const Tensor& logits, const Tensor& target,
                           const CrossEntropyOptions& options) {
  check_float("cross_entropy", logits);
  if (target.dtype() != Dtype::Int64)
    throw Error(
        "cross_entropy: expected scalar type Long but found Float (targets are class "
        "indices)");
  const auto& red = options.reduction;
  if (red != "mean" && red != "sum" && red != "none")
    throw Error(fmt::format("cross_entropy: {} is not a valid value for reduction", red));
  const float eps = options.label_smoothing;
  if (eps < 0.0f || eps > 1.0f)
    throw Error(
        fmt::format("cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {}", eps));
  if (options.nll && red == "none")
    throw Error("cross_entropy: nll is returned for reduction 'mean' or 'sum', not 'none'");
  if (logits.dim() == 0) throw Error("cross_entropy: logits must have at least one dimension");
  Shape expected = logits.shape();
  if (logits.dim() >= 2)
    expected.erase(expected.begin() + 1);
  else
    expected = {};
  if (target.shape() != expected)
    throw Error(fmt::format("cross_entropy: Expected target size {}, got {} (logits {})",
                            expected.str(), target.shape().str(), logits.shape().str()));
  if (logits.dim() <= 2) return logits.dim() == 1 ? logits.unsqueeze(0) : logits;
  std::vector<int64_t> to_last{0};  // [N, C, d...] -> [N, d..., C]
  for (int64_t d = 2; d < logits.dim(); ++d) to_last.push_back(d);
  to_last.push_back(1);
  return logits.permute(to_last).reshape({-1, logits.size(1)});
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& options) {
  const Tensor input = cross_entropy_input(logits, target, options);
  CrossEntropyRows rows{input.detach().contiguous(), target.to_int_vector(), input.size(0),
                        input.size(1)};
  const int64_t N = rows.N, C = rows.C;
  for (int64_t t : rows.targets) {
    if (t == options.ignore_index) continue;
    if (t < 0 || t >= C)
      throw Error(
          fmt::format("cross_entropy: Target {} is out of bounds (classes 0..{})", t, C - 1));
    ++rows.count;
  }
  const float eps = options.label_smoothing;
  // loss_n = (1-ε)(lse - x_t) + ε(lse - mean(x)): cross entropy against the smoothed target, with
  // lse = log Σ e^x of row n; nll_n = lse - x_t, the loss without smoothing.
  std::vector<float> losses(N, 0.0f), nlls(options.nll ? N : 0, 0.0f);
  if (auto fast = fast_kernel<CrossEntropyForward>("cross_entropy")) {
    fast(rows, options, losses, nlls);
  } else {
    for (int64_t n = 0; n < N; ++n) {
      const int64_t t = rows.targets[n];
      if (t == options.ignore_index) continue;
      const float* row = rows.x.data() + n * C;
      const float lse = row_logsumexp(row, C);
      float total = 0.0f;
      for (int64_t c = 0; c < C; ++c) total += row[c];
      const float nll = lse - row[t];
      losses[n] = (1.0f - eps) * nll + eps * (lse - total / static_cast<float>(C));
      if (!nlls.empty()) nlls[n] = nll;
    }
  }
  // Summed in double, in row order: the same bits on every path and thread count.
  const auto& red = options.reduction;
  auto reduce = [&](const std::vector<float>& v) {
    double total = 0.0;
    for (float l : v) total += l;
    return red == "sum"      ? static_cast<float>(total)
           : rows.count == 0 ? std::nanf("")
                             : static_cast<float>(total / static_cast<double>(rows.count));
  };
  if (options.nll) *options.nll = reduce(nlls);
  Tensor out = red == "none" ? from_vector(losses, target.shape()) : full({}, reduce(losses));
  return record(out, "NllLossBackward0", {input}, [rows, options](const Tensor& g) {
    // Each row's share of the upstream gradient: g_n ("none"), g ("sum") or g / count ("mean").
    const auto gv = g.to_vector();
    std::vector<float> scale(rows.N, 0.0f);
    for (int64_t n = 0; n < rows.N; ++n)
      if (rows.targets[n] != options.ignore_index)
        scale[n] = options.reduction == "none"  ? gv[n]
                   : options.reduction == "sum" ? gv[0]
                                                : gv[0] / static_cast<float>(rows.count);
    Tensor gx = empty({rows.N, rows.C});
    const float eps = options.label_smoothing;
    if (auto fast = fast_kernel<CrossEntropyBackward>("cross_entropy_backward")) {
      fast(rows, scale, eps, gx);
      return std::vector<Tensor>{gx};
    }
    // d loss_n / d x = (softmax(x) - (1-ε) onehot(t) - ε/C) · scale_n
    const int64_t C = rows.C;
    for (int64_t n = 0; n < rows.N; ++n) {
      const float* row = rows.x.data() + n * C;
      const float lse = row_logsumexp(row, C);
      for (int64_t c = 0; c < C; ++c) {
        const float share =
            (c == rows.targets[n] ? 1.0f - eps : 0.0f) + eps / static_cast<float>(C);
        gx.data()[n * C + c] =
            scale[n] == 0.0f ? 0.0f : (std::exp(row[c] - lse) - share) * scale[n];
      }
    }
    return std::vector<Tensor>{gx};
  });
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  if (input.shape() != target.shape())
    throw Error(fmt::format("mse_loss: input shape {} and target shape {} differ",
                            input.shape().str(), target.shape().str()));
  Tensor d = sub(input, target);
  Tensor sq = mul(d, d);
  if (reduction == "none") return sq;
  if (reduction == "sum") return sum(sq);
  if (reduction == "mean") return mean(sq);
  throw Error(fmt::format("mse_loss: {} is not a valid value for reduction", reduction));
}

}  // namespace anatomy
