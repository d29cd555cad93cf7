// Fused kernels of torch.nn.functional's softmax, log_softmax, layer_norm, dropout,
// dropout_add_layer_norm and cross_entropy: the fast forms of the ops in
// autograd/functional.cpp, which they must equal. Each reads its input once per pass, keeps no
// temporaries, and splits its rows between threads.
//
// Dimension letters: N rows, C the dim being normalized (classes, features).
#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/fused_kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/random.hpp"
#include "kernels/parallel_draws.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

using simd::batch;

namespace {

// Rows per chunk: enough that a chunk holds about simd::kGrain values.
int64_t row_grain(int64_t C) {
  return std::max<int64_t>(1, simd::kGrain / std::max<int64_t>(C, 1));
}

// fn(n0, n1) over rows [0, N) of C values each, split between threads when there are enough
// values for it to pay off.
template <typename F>
void for_rows(int64_t N, int64_t C, F fn) {
  parallel_for(N, row_grain(C), fn);
}

// for_rows for rows that take an exp of every value (softmax, log-softmax, cross-entropy): a
// value costs several times an elementwise op's, so a quarter of the grain pays off (cross-entropy
// over a character vocabulary of 65 is then split too). Each row is computed alone, so the split
// does not change the bits.
template <typename F>
void for_exp_rows(int64_t N, int64_t C, F fn) {
  parallel_for(N, std::max<int64_t>(1, row_grain(C) / 4), fn);
}

// Layer norm's rows in registers: a quarter of the grain, as for_exp_rows, so that a few hundred
// rows of 128 features make enough chunks for both threads.
int64_t norm_row_grain(int64_t C) { return std::max<int64_t>(1, row_grain(C) / 4); }
template <typename F>
void for_norm_rows(int64_t N, int64_t C, F fn) {
  parallel_for(N, norm_row_grain(C), fn);
}

// Runs `rows(x, y, N, C)` on contiguous [N, C] buffers with `dim` as C, moving `dim` last and
// back when needed.
template <typename Rows>
Tensor along_dim(const Tensor& a, int64_t dim, Rows rows) {
  const bool last = dim == a.dim() - 1 || a.dim() == 0;
  Tensor x = last ? a.contiguous() : transpose(a.detach(), dim, -1).contiguous();
  Tensor y = empty(x.shape());
  const int64_t C = a.dim() == 0 ? 1 : x.size(-1);
  const int64_t N = C == 0 ? 0 : x.numel() / C;
  rows(x.data(), y.data(), N, C);
  return last ? y : transpose(y, dim, -1).contiguous();
}

// Two inputs of the same shape (for backward passes).
template <typename Rows>
Tensor along_dim2(const Tensor& a, const Tensor& b, int64_t dim, Rows rows) {
  const bool last = dim == a.dim() - 1 || a.dim() == 0;
  Tensor xa = last ? a.contiguous() : transpose(a, dim, -1).contiguous();
  Tensor xb = last ? b.contiguous() : transpose(b, dim, -1).contiguous();
  Tensor y = empty(xa.shape());
  const int64_t C = a.dim() == 0 ? 1 : xa.size(-1);
  const int64_t N = C == 0 ? 0 : xa.numel() / C;
  rows(xa.data(), xb.data(), y.data(), N, C);
  return last ? y : transpose(y, dim, -1).contiguous();
}

// y = softmax(x) over one row; subtracting the max keeps exp() from overflowing.
void softmax_row(const float* x, float* y, int64_t C) {
  const batch m(simd::max(x, C));
  simd::map(x, y, C, [&](batch v) { return xsimd::exp(v - m); });
  const batch inv(1.0f / simd::sum(y, C));
  simd::map(y, y, C, [&](batch v) { return v * inv; });
}

// y = x - logsumexp(x) over one row.
void log_softmax_row(const float* x, float* y, int64_t C) {
  const float m = simd::max(x, C);
  const batch lse(m + std::log(simd::sum_exp(x, C, m)));
  simd::map(x, y, C, [&](batch v) { return v - lse; });
}

// dx = y ⊙ (g - Σ g ⊙ y) over one row, given softmax's output y.
void softmax_backward_row(const float* g, const float* y, float* dx, int64_t C) {
  const batch dot(simd::dot(g, y, C));
  simd::map2(g, 1, y, 1, dx, C, [&](batch gv, batch yv) { return yv * (gv - dot); });
}

// dx = g - e^y Σ g over one row, given log_softmax's output y.
void log_softmax_backward_row(const float* g, const float* y, float* dx, int64_t C) {
  const batch s(simd::sum(g, C));
  simd::map2(g, 1, y, 1, dx, C, [&](batch gv, batch yv) { return gv - xsimd::exp(yv) * s; });
}

// `row(x, y, C)` on every row along `dim`, split as for_exp_rows.
template <typename Row>
Tensor each_exp_row(const Tensor& a, int64_t dim, Row row) {
  return along_dim(a, dim, [&](const float* x, float* y, int64_t N, int64_t C) {
    for_exp_rows(N, C, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) row(x + n * C, y + n * C, C);
    });
  });
}

// `row(g, y, dx, C)` on every row along `dim` of the gradient g and the op's output y, split as
// for_exp_rows where the row takes an exp of every value, else as for_rows.
template <typename Row>
Tensor each_gradient_row(const Tensor& g, const Tensor& y, int64_t dim, bool takes_exp, Row row) {
  return along_dim2(g, y, dim,
                    [&](const float* gp, const float* yp, float* dx, int64_t N, int64_t C) {
                      const auto rows = [&](int64_t n0, int64_t n1) {
                        for (int64_t n = n0; n < n1; ++n)
                          row(gp + n * C, yp + n * C, dx + n * C, C);
                      };
                      takes_exp ? for_exp_rows(N, C, rows) : for_rows(N, C, rows);
                    });
}

// The op (autograd/functional.cpp) has checked `a` and wrapped `dim`, and records the node.
Tensor fast_softmax(const Tensor& a, int64_t dim) { return each_exp_row(a, dim, softmax_row); }

Tensor fast_softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return each_gradient_row(g, y, dim, false, softmax_backward_row);
}

Tensor fast_log_softmax(const Tensor& a, int64_t dim) {
  return each_exp_row(a, dim, log_softmax_row);
}

Tensor fast_log_softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return each_gradient_row(g, y, dim, true, log_softmax_backward_row);
}

// Rows of up to simd::kRowVectors vectors of features (simd::row_fits) are normalized in
// registers: a row is loaded once (its last vector twice), its mean, variance, x̂ and output
// computed there, and each result stored once; the backward likewise. Wider rows go through
// passes over memory (simd::sum, simd::dot, ...).
//
// One row of layer norm: x̂ = (x - mean) / σ into hr, x̂ w + b into yr; returns 1/σ.
template <int NV>
float layer_norm_row(const float* xr, float* hr, float* yr, const float* w, const float* b,
                     int64_t C, float eps) {
  batch v[NV], total(0.0f);
  for (int c = 0; c < NV; ++c) total += v[c] = simd::row_load<NV>(xr, c, C);
  const float mean = xsimd::hadd(total) / static_cast<float>(C);
  // The last vector again with the mean past the last feature, so that those lanes add nothing
  // to the variance.
  v[NV - 1] = simd::row_load<NV>(xr, NV - 1, C, mean);
  batch sq(0.0f);
  for (int c = 0; c < NV; ++c) {
    v[c] = v[c] - batch(mean);
    sq = xsimd::fma(v[c], v[c], sq);
  }
  const float r = 1.0f / std::sqrt(xsimd::hadd(sq) / static_cast<float>(C) + eps);
  const batch rb(r);
  for (int c = 0; c < NV; ++c) {
    const batch h = v[c] * rb;
    simd::row_store<NV>(hr, c, C, h);
    batch y = h;
    if (w && b)
      y = xsimd::fma(h, simd::row_load<NV>(w, c, C), simd::row_load<NV>(b, c, C));
    else if (w)
      y = h * simd::row_load<NV>(w, c, C);
    else if (b)
      y = h + simd::row_load<NV>(b, c, C);
    simd::row_store<NV>(yr, c, C, y);
  }
  return r;
}

// Layer norm's forward over N contiguous rows of C values: out, and x̂ and 1/σ per row for the
// backward.
LayerNormSaved layer_norm_rows(const float* x, const Shape& shape, int64_t N, int64_t C,
                               const Tensor& weight, const Tensor& bias, float eps) {
  LayerNormSaved s{empty(shape), empty(shape), empty({N})};
  // Held here: a strided weight's contiguous copy must outlive the loop that reads it.
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const float* w = wc.defined() ? wc.data() : nullptr;
  const float* b = bc.defined() ? bc.data() : nullptr;
  if (simd::row_fits(C)) {
    for_norm_rows(N, C, [&](int64_t n0, int64_t n1) {
      simd::with_row_vectors(C, [&](auto nv) {
        for (int64_t n = n0; n < n1; ++n)
          s.rstd.data()[n] = layer_norm_row<decltype(nv)::value>(
              x + n * C, s.xhat.data() + n * C, s.out.data() + n * C, w, b, C, eps);
      });
    });
    return s;
  }
  for_rows(N, C, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const float* xr = x + n * C;
      float* hr = s.xhat.data() + n * C;
      float* yr = s.out.data() + n * C;
      const float mean = simd::sum(xr, C) / static_cast<float>(C);
      const float var = simd::sum_sq_dev(xr, C, mean) / static_cast<float>(C);  // biased
      const float r = 1.0f / std::sqrt(var + eps);
      s.rstd.data()[n] = r;
      const batch mb(mean), rb(r);
      simd::map(xr, hr, C, [&](batch v) { return (v - mb) * rb; });
      if (w && b)
        simd::map3(hr, 1, w, 1, b, 1, yr, C,
                   [](batch h, batch wv, batch bv) { return xsimd::fma(h, wv, bv); });
      else if (w)
        simd::map2(hr, 1, w, 1, yr, C, [](batch h, batch wv) { return h * wv; });
      else if (b)
        simd::map2(hr, 1, b, 1, yr, C, [](batch h, batch bv) { return h + bv; });
      else
        std::copy(hr, hr + C, yr);
    }
  });
  return s;
}

// One row of layer norm's backward: dx = rstd (ĝ - mean(ĝ) - x̂ mean(ĝ ⊙ x̂)) with ĝ = g ⊙ w into
// gx; pw += g ⊙ x̂ and pb += g, the row's terms of dw and db (null: not wanted).
template <int NV>
void layer_norm_grad_row(const float* gr, const float* hr, const float* w, float r, float* gx,
                         float* pw, float* pb, int64_t C) {
  // Both loops unrolled, so that the three arrays stay registers (24 for rows of 128): rolled,
  // GCC keeps them on the stack.
  batch g[NV], h[NV], gh[NV], s1(0.0f), s2(0.0f);
#pragma GCC unroll 16
  for (int c = 0; c < NV; ++c) {
    g[c] = simd::row_load<NV>(gr, c, C);
    h[c] = simd::row_load<NV>(hr, c, C);
    gh[c] = w ? g[c] * simd::row_load<NV>(w, c, C) : g[c];
    s1 += gh[c];
    s2 = xsimd::fma(gh[c], h[c], s2);
  }
  const batch m1(xsimd::hadd(s1) / static_cast<float>(C)),
      m2(xsimd::hadd(s2) / static_cast<float>(C));
  const batch rb(r);
#pragma GCC unroll 16
  for (int c = 0; c < NV; ++c) {
    simd::row_store<NV>(gx, c, C, rb * (gh[c] - m1 - h[c] * m2));
    if (pw) simd::row_store<NV>(pw, c, C, xsimd::fma(g[c], h[c], simd::row_load<NV>(pw, c, C)));
    if (pb) simd::row_store<NV>(pb, c, C, simd::row_load<NV>(pb, c, C) + g[c]);
  }
}

// Layer norm's backward over N rows of C values: {dx, dw, db}.
std::vector<Tensor> fast_layer_norm_backward(const Tensor& g, const Tensor& xhat,
                                             const Tensor& rstd, const Tensor& weight,
                                             const Tensor& bias, int64_t N, int64_t C) {
  Tensor gc = g.contiguous();
  Tensor gx = empty(g.shape());
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();
  const float* w = wc.defined() ? wc.data() : nullptr;
  // dw and db sum over rows: each chunk of rows sums its own, and the chunks'
  // sums are added in chunk order (the same for a given thread count).
  const bool fast = simd::row_fits(C);
  const int64_t chunks = parallel_chunks(N, fast ? norm_row_grain(C) : row_grain(C));
  std::vector<float> part_w(weight.defined() ? chunks * C : 0, 0.0f);
  std::vector<float> part_b(bias.defined() ? chunks * C : 0, 0.0f);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> gh(fast ? 0 : C);
    for (int64_t c = c0; c < c1; ++c) {
      float* pw = part_w.empty() ? nullptr : part_w.data() + c * C;
      float* pb = part_b.empty() ? nullptr : part_b.data() + c * C;
      const int64_t n0 = N * c / chunks, n1 = N * (c + 1) / chunks;
      if (fast) {
        simd::with_row_vectors(C, [&](auto nv) {
          for (int64_t n = n0; n < n1; ++n)
            layer_norm_grad_row<decltype(nv)::value>(gc.data() + n * C, xhat.data() + n * C, w,
                                                     rstd.data()[n], gx.data() + n * C, pw, pb, C);
        });
        continue;
      }
      for (int64_t n = n0; n < n1; ++n) {
        const float* gr = gc.data() + n * C;
        const float* hr = xhat.data() + n * C;
        // dL/dxhat = g ⊙ w; then dx = rstd (ĝ - mean(ĝ) - x̂ mean(ĝ ⊙ x̂))
        if (w)
          simd::map2(gr, 1, w, 1, gh.data(), C, [](batch a, batch b) { return a * b; });
        else
          std::copy(gr, gr + C, gh.data());
        const batch m1(simd::sum(gh.data(), C) / static_cast<float>(C));
        const batch m2(simd::dot(gh.data(), hr, C) / static_cast<float>(C));
        const batch r(rstd.data()[n]);
        simd::map2(gh.data(), 1, hr, 1, gx.data() + n * C, C,
                   [&](batch a, batch h) { return r * (a - m1 - h * m2); });
        // dw = Σ_rows g ⊙ x̂, db = Σ_rows g
        if (pw)
          simd::map3(pw, 1, gr, 1, hr, 1, pw, C,
                     [](batch acc, batch a, batch h) { return xsimd::fma(a, h, acc); });
        if (pb) simd::map2(pb, 1, gr, 1, pb, C, [](batch acc, batch a) { return acc + a; });
      }
    }
  });
  auto total = [&](const std::vector<float>& parts, const Tensor& like) {
    if (!like.defined()) return Tensor();
    Tensor t = empty(like.shape());
    simd::sum_rows(parts.data(), chunks, C, t.data());
    return t;
  };
  return std::vector<Tensor>{gx, total(part_w, weight), total(part_b, bias)};
}

// x is contiguous (the op made it so).
LayerNormSaved fast_layer_norm(const Tensor& x, int64_t N, int64_t C, const Tensor& weight,
                               const Tensor& bias, float eps) {
  return layer_norm_rows(x.data(), x.shape(), N, C, weight, bias, eps);
}

// m[i] = draw m[i] kept (>= p) ? scale : 0, and y[i] = x[i] m[i]. The three never overlap (fresh
// tensors), and saying so lets the compiler vectorize the loop.
void apply_dropout(float* __restrict m, const float* __restrict x, float* __restrict y, int64_t n,
                   float p, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] >= p ? scale : 0.0f;
    y[i] = x[i] * m[i];
  }
}

// The same with a residual: y[i] = r[i] + x[i] m[i].
void apply_dropout_add(float* __restrict m, const float* __restrict x, const float* __restrict r,
                       float* __restrict y, int64_t n, float p, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] >= p ? scale : 0.0f;
    y[i] = r[i] + x[i] * m[i];
  }
}

// x is contiguous; mask and out are fresh tensors of its shape.
void fast_dropout(const Tensor& x, float p, float scale, const Tensor& mask, const Tensor& out) {
  const float* xp = x.data();
  float* m = mask.data();
  float* y = out.data();
  // One pass draws the mask and applies it; the draws are the default generator's, in element
  // order, whatever the thread count.
  parallel_draws(mask.numel(), 1, [&](Generator& gen, int64_t begin, int64_t end) {
    uniform_fill(gen, m + begin, end - begin);  // the draws first, then the mask in their place
    apply_dropout(m + begin, xp + begin, y + begin, end - begin, p, scale);
  });
}

DropoutAddSaved fast_dropout_add_layer_norm(const Tensor& x, const Tensor& residual, float p,
                                            bool training, int64_t N, int64_t C,
                                            const Tensor& weight, const Tensor& bias, float eps) {
  const bool drop = training && p > 0.0f;
  Tensor xc = x.contiguous(), rc = residual.contiguous();
  Tensor sum = empty(x.shape());
  Tensor mask = drop ? empty(x.shape()) : Tensor();
  const float* xp = xc.data();
  const float* rp = rc.data();
  float* sp = sum.data();
  if (drop) {
    // dropout()'s very draws and mask (the default generator's numbers in element order), with
    // the residual added in the same pass: sum = residual + x ⊙ mask.
    const float scale = p == 1.0f ? 0.0f : 1.0f / (1.0f - p);
    float* m = mask.data();
    parallel_draws(sum.numel(), 1, [&](Generator& gen, int64_t begin, int64_t end) {
      uniform_fill(gen, m + begin, end - begin);
      apply_dropout_add(m + begin, xp + begin, rp + begin, sp + begin, end - begin, p, scale);
    });
  } else {
    simd::map2(xp, 1, rp, 1, sp, sum.numel(), [](batch v, batch r) { return r + v; });
  }
  return {sum, mask, layer_norm_rows(sp, x.shape(), N, C, weight, bias, eps)};
}

void fast_cross_entropy(const CrossEntropyRows& rows, const CrossEntropyOptions& options,
                        std::vector<float>& losses, std::vector<float>& nlls) {
  const int64_t C = rows.C;
  const float eps = options.label_smoothing;
  for_exp_rows(rows.N, C, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const int64_t t = rows.targets[n];
      if (t == options.ignore_index) continue;
      const float* row = rows.x.data() + n * C;
      const float m = simd::max(row, C);
      const float lse = m + std::log(simd::sum_exp(row, C, m));
      const float nll = lse - row[t];
      const float smooth = lse - simd::sum(row, C) / static_cast<float>(C);
      losses[n] = (1.0f - eps) * nll + eps * smooth;
      if (!nlls.empty()) nlls[n] = nll;
    }
  });
}

void fast_cross_entropy_backward(const CrossEntropyRows& rows, const std::vector<float>& scales,
                                 float eps, const Tensor& grad_rows) {
  const int64_t C = rows.C;
  for_exp_rows(rows.N, C, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      float* dst = grad_rows.data() + n * C;
      if (scales[n] == 0.0f) {
        std::fill(dst, dst + C, 0.0f);
        continue;
      }
      softmax_row(rows.x.data() + n * C, dst, C);
      const batch sb(scales[n]), off(eps / static_cast<float>(C));
      simd::map(dst, dst, C, [&](batch p) { return (p - off) * sb; });
      dst[rows.targets[n]] -= (1.0f - eps) * scales[n];
    }
  });
}
}  // namespace

void register_functional_kernels() {
  register_kernel<Tensor(const Tensor&, int64_t)>("softmax", fast_softmax);
  register_kernel<Tensor(const Tensor&, int64_t)>("log_softmax", fast_log_softmax);
  using RowsBackward = Tensor(const Tensor& grad, const Tensor& output, int64_t dim);
  register_kernel<RowsBackward>("softmax_backward", fast_softmax_backward);
  register_kernel<RowsBackward>("log_softmax_backward", fast_log_softmax_backward);
  register_kernel<LayerNormKernel>("layer_norm", fast_layer_norm);
  register_kernel<LayerNormBackward>("layer_norm_backward", fast_layer_norm_backward);
  register_kernel<DropoutKernel>("dropout", fast_dropout);
  register_kernel<DropoutAddLayerNormKernel>("dropout_add_layer_norm", fast_dropout_add_layer_norm);
  register_kernel<CrossEntropyForward>("cross_entropy", fast_cross_entropy);
  register_kernel<CrossEntropyBackward>("cross_entropy_backward", fast_cross_entropy_backward);
}

}  // namespace anatomy
