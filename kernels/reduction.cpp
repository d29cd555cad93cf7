// The reductions on SIMD vectors, split between threads by outputs: fast kernels of sum, mean,
// amax, amin, argmax and argmin in autograd/reduction.cpp, which they must equal.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

// A reduction seen as a contiguous [O, R, I] block: O outer rows, R reduced, I inner.
struct Plan {
  std::vector<int64_t> dims;  // sorted, wrapped
  Shape keep_shape;           // with reduced dims as 1
  Shape out_shape;            // as asked (keepdim or not)
  Tensor x;                   // contiguous data laid out as [O, R, I]
  int64_t O = 1, R = 1, I = 1;
};

Plan make_plan(const char* op, const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  if (a.dtype() != Dtype::Float32)
    throw Error(fmt::format("{}: expected a float32 tensor but got int64", op));
  Plan p;
  const int64_t nd = a.dim();
  if (dims.empty())
    for (int64_t d = 0; d < std::max<int64_t>(nd, 1); ++d) dims.push_back(d);
  for (auto& d : dims) d = wrap_dim(op, d, nd);
  std::sort(dims.begin(), dims.end());
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] == dims[i - 1])
      throw Error(
          fmt::format("{}: dim {} appears multiple times in the list of dims", op, dims[i]));
  p.dims = dims;
  if (nd == 0) {
    p.x = a.contiguous();
    return p;
  }
  auto reduced = [&](int64_t d) { return std::binary_search(dims.begin(), dims.end(), d); };
  for (int64_t d = 0; d < nd; ++d) {
    p.keep_shape.push_back(reduced(d) ? 1 : a.size(d));
    if (!reduced(d) || keepdim) p.out_shape.push_back(reduced(d) ? 1 : a.size(d));
  }
  const bool consecutive = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  if (consecutive) {
    p.x = a.contiguous();
    for (int64_t d = 0; d < nd; ++d)
      (d < dims.front() ? p.O : d > dims.back() ? p.I : p.R) *= a.size(d);
  } else {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d)
      if (!reduced(d)) perm.push_back(d);
    for (int64_t d : dims) perm.push_back(d);
    p.x = permute(a.detach(), perm).contiguous();
    for (int64_t d = 0; d < nd; ++d) (reduced(d) ? p.R : p.O) *= a.size(d);
  }
  return p;
}

// out[o, i] = fold over r of x[o, r, i], with `row` folding a contiguous row and `step`
// combining two batches.
template <typename Row, typename Step>
Tensor reduce_kernel(const Plan& p, Row row, Step step) {
  Tensor out = empty(p.out_shape);
  const float* x = p.x.data();
  float* y = out.data();
  if (out.numel() == 0) return out;
  if (p.R == 0) return out.fill_(0.0f);  // a sum over nothing (max and min refuse it earlier)
  // Split between threads by outputs, never along R: each output folds its R values in the same
  // order whatever the thread count, so the bits do not depend on it. A bias gradient (Σ over 768
  // rows of [768, N], one outer row) ran on one core while the other waited.
  const int64_t grain = std::max<int64_t>(1, simd::kGrain / p.R);  // outputs per kGrain values
  if (p.I == 1) {
    parallel_for(p.O, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) y[o] = row(x + o * p.R, p.R);
    });
    return out;
  }
  // Tasks of `span` columns of one outer row, about kGrain values to fold each; a multiple of W
  // columns, so that a split never changes which columns share a vector.
  const int64_t span = std::min(p.I, (grain + simd::W - 1) / simd::W * simd::W);
  const int64_t per_row = (p.I + span - 1) / span;
  parallel_for(p.O * per_row, std::max<int64_t>(1, simd::kGrain / (p.R * span)),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t o = t / per_row, i0 = t % per_row * span,
                                 n = std::min(span, p.I - i0);
                   float* dst = y + o * p.I + i0;
                   const float* src = x + o * p.R * p.I + i0;
                   std::copy(src, src + n, dst);
                   for (int64_t r = 1; r < p.R; ++r)
                     simd::map2_range(dst, 1, src + r * p.I, 1, dst, n, step);
                 }
               });
  return out;
}

// g of a reduction's output, broadcast back to the input's shape.
Tensor expand_back(const Tensor& g, const Plan& p, const Shape& input_shape) {
  return expand(reshape(g, p.keep_shape), input_shape);
}

Tensor amax_or_amin(const char* op, const char* node, const Tensor& a, std::vector<int64_t> dims,
                    bool keepdim, bool is_max) {
  if (a.numel() == 0)
    throw Error(
        fmt::format("{}: Expected reduction dim to be specified for input.numel() == 0", op));
  Plan p = make_plan(op, a, std::move(dims), keepdim);
  // NaN propagates, as in PyTorch: the extremum of a slice holding a NaN is NaN.
  Tensor out = is_max ? reduce_kernel(p, simd::max, simd::extremum<true>)
                      : reduce_kernel(
                            p,
                            [](const float* x, int64_t n) {
                              float m = x[0];
                              for (int64_t i = 0; i < n && !std::isnan(m); ++i)
                                m = std::isnan(x[i]) ? x[i] : std::min(m, x[i]);
                              return m;
                            },
                            simd::extremum<false>);
  return record(out, node, {a}, [a, p, y = out.detach()](const Tensor& g) {
    // The gradient is shared evenly among the elements equal to the extremum.
    Tensor hit = eq(a, expand_back(y, p, a.shape()));
    Tensor share = div(hit, sum(hit, p.dims, true));
    return std::vector<Tensor>{mul(expand_back(g, p, a.shape()), share)};
  });
}

// Index of the first largest (smallest) element along `dim`.
Tensor arg_search(const char* op, const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  if (a.dtype() != Dtype::Float32)
    throw Error(fmt::format("{}: expected a float32 tensor but got int64", op));
  dim = wrap_dim(op, dim, a.dim());
  if (a.dim() > 0 && a.size(dim) == 0)
    throw Error(fmt::format("{}: Expected reduction dim {} to have non-zero size", op, dim));
  // Search along the last dim of a copy with `dim` moved last, then move the result back.
  Tensor x = a.dim() == 0 ? a.reshape({1}) : transpose(a.detach(), dim, -1).contiguous();
  const int64_t R = x.size(-1);
  Shape rows = x.shape();
  rows.pop_back();
  Tensor out = empty(rows, Dtype::Int64);
  int64_t* idx = out.data_ptr<int64_t>();
  const float* px = x.data();
  // Rows in parallel (greedy decoding takes the argmax of every row's logits each step).
  parallel_for(out.numel(), std::max<int64_t>(1, simd::kGrain / R), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* row = px + o * R;
      int64_t best = 0;
      if (is_max) {
        // The largest value in vectors, then the first place it occurs: a NaN is the largest
        // (NaN propagates through max, as in PyTorch) and matches itself only by isnan.
        const float m = simd::max(row, R);
        while (std::isnan(m) ? !std::isnan(row[best]) : row[best] != m) ++best;
      } else {
        // The first NaN wins, as in PyTorch (NaN propagates through max and min).
        for (int64_t r = 1; r < R && !std::isnan(row[best]); ++r)
          if (std::isnan(row[r]) || row[r] < row[best]) best = r;
      }
      idx[o] = best;
    }
  });
  if (a.dim() == 0) return out;
  Tensor t = unsqueeze(out, -1);
  if (dim != a.dim() - 1) t = transpose(t, dim, -1).contiguous();
  return keepdim ? t : squeeze(t, dim);
}

Tensor fast_sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  // PyTorch's names: x.sum() is SumBackward0, x.sum(dim) SumBackward1 (even over every dim).
  const char* name = dims.empty() ? "SumBackward0" : "SumBackward1";
  Plan p = make_plan("sum", a, std::move(dims), keepdim);
  Tensor out = reduce_kernel(p, simd::sum, [](auto u, auto v) { return u + v; });
  return record(out, name, {a}, [p, shape = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g, p, shape)};  // d(Σx)/dx_i = 1
  });
}

Tensor fast_mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  const char* name = dims.empty() ? "MeanBackward0" : "MeanBackward1";
  Plan p = make_plan("mean", a, std::move(dims), keepdim);
  const auto count = static_cast<float>(p.R);
  Tensor out = reduce_kernel(p, simd::sum, [](auto u, auto v) { return u + v; });
  for (float* v = out.data(); v != out.data() + out.numel(); ++v) *v /= count;  // as torch rounds
  return record(out, name, {a}, [p, count, shape = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g / count, p, shape)};  // d(Σx/n)/dx_i = 1/n
  });
}

Tensor fast_amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return amax_or_amin("amax", "AmaxBackward0", a, std::move(dims), keepdim, true);
}
Tensor fast_amin(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return amax_or_amin("amin", "AminBackward0", a, std::move(dims), keepdim, false);
}
Tensor fast_argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_search("argmax", a.reshape({-1}), 0, false, true);
  return arg_search("argmax", a, *dim, keepdim, true);
}
Tensor fast_argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_search("argmin", a.reshape({-1}), 0, false, false);
  return arg_search("argmin", a, *dim, keepdim, false);
}

}  // namespace

void register_reduction_kernels() {
  using Reduction = Tensor(const Tensor&, std::vector<int64_t>, bool);
  using ArgSearch = Tensor(const Tensor&, std::optional<int64_t>, bool);
  register_kernel<Reduction>("sum", fast_sum);
  register_kernel<Reduction>("mean", fast_mean);
  register_kernel<Reduction>("amax", fast_amax);
  register_kernel<Reduction>("amin", fast_amin);
  register_kernel<ArgSearch>("argmax", fast_argmax);
  register_kernel<ArgSearch>("argmin", fast_argmin);
}

}  // namespace anatomy
