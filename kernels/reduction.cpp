// The folds of the reductions on SIMD vectors, split between threads by outputs: fast kernels
// of sum (and so mean), amax, amin, argmax and argmin in autograd/reduction.cpp, which they must
// equal. The ops plan each reduction (autograd/reduction.hpp), check it and record its gradient;
// these compute the numbers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/dispatch.hpp"
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/reduction.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

// out[o, i] = fold over r of x[o, r, i], with `row` folding a contiguous row and `step`
// combining two batches.
template <typename Row, typename Step>
Tensor reduce_kernel(const ReductionPlan& p, Row row, Step step) {
  Tensor out = empty(p.out_shape);
  const float* x = p.x.data();
  float* y = out.data();
  if (out.numel() == 0) return out;
  if (p.R == 0) return out.fill_(0.0f);  // a sum over nothing (max and min refuse it earlier)
  // Split between threads by outputs, never along R: each output folds its R values in the same
  // order whatever the thread count, so the bits do not depend on it. Columns are split too, so
  // that a bias gradient (Σ over the rows of [rows, N], one outer row) keeps both cores busy.
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

Tensor fast_sum(const ReductionPlan& p) {
  return reduce_kernel(p, simd::sum, [](auto u, auto v) { return u + v; });
}

// NaN propagates, as in PyTorch: the extremum of a slice holding a NaN is NaN.
Tensor fast_amax(const ReductionPlan& p) {
  return reduce_kernel(p, simd::max, simd::extremum<true>);
}
Tensor fast_amin(const ReductionPlan& p) {
  return reduce_kernel(
      p,
      [](const float* x, int64_t n) {
        float m = x[0];
        for (int64_t i = 0; i < n && !std::isnan(m); ++i)
          m = std::isnan(x[i]) ? x[i] : std::min(m, x[i]);
        return m;
      },
      simd::extremum<false>);
}

// index[o] = the first place of row o's extremum; rows split between threads (greedy decoding
// takes the argmax of every row's logits each step).
template <bool is_max>
void arg_search(const Tensor& rows, const Tensor& index) {
  const int64_t R = rows.size(1);
  const float* px = rows.data();
  int64_t* idx = index.data_ptr<int64_t>();
  parallel_for(rows.size(0), std::max<int64_t>(1, simd::kGrain / R), [&](int64_t o0, int64_t o1) {
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
}

}  // namespace

void register_reduction_kernels() {
  register_kernel<ReductionKernel>("sum", fast_sum);
  register_kernel<ReductionKernel>("amax", fast_amax);
  register_kernel<ReductionKernel>("amin", fast_amin);
  register_kernel<ArgSearchKernel>("argmax", arg_search<true>);
  register_kernel<ArgSearchKernel>("argmin", arg_search<false>);
}

}  // namespace anatomy
