// SIMD building blocks for the kernels (internal: included by .cpp files only, so the batch
// width chosen by -march never leaks into a consumer's translation units).
//
// A kernel is written once as a generic lambda over xsimd::batch<float>. The last partial batch
// goes through a small stack buffer, so tail elements are computed by exactly the same
// instructions as the body: results do not depend on where an element falls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include "kernels/parallel.hpp"
#include "kernels/xsimd.hpp"

namespace anatomy::simd {

using batch = xsimd::batch<float>;
inline constexpr int64_t W = static_cast<int64_t>(batch::size);

// The n <= W floats at p as a batch, `fill` in the other lanes; and a batch's first n lanes
// stored at p. With AVX-512 one masked load or store, which touches nothing past the n floats;
// else through a stack buffer. The elementwise loops' last partial vectors go so, and so do the
// last vectors of the rows held in registers (row_load: flash_attention loads -inf past the last
// key of a row of scores).
inline batch load_tail(const float* p, int64_t n, float fill = 0.0f) {
#ifdef __AVX512F__
  static_assert(W == 16, "AVX-512: 16 floats to a batch, one mask bit each");
  return batch(
      _mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>((1u << n) - 1), p));
#else
  alignas(64) float buf[W];
  std::fill(buf, buf + W, fill);
  std::memcpy(buf, p, sizeof(float) * static_cast<size_t>(n));
  return batch::load_aligned(buf);
#endif
}

inline void store_tail(float* p, const batch& v, int64_t n) {
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
#else
  alignas(64) float buf[W];
  v.store_aligned(buf);
  std::memcpy(p, buf, sizeof(float) * static_cast<size_t>(n));
#endif
}

// A tail operand with stride s in {0, 1}: 0 repeats one value.
inline batch load_tail_strided(const float* p, int64_t s, int64_t n) {
  return s == 0 ? batch(p[0]) : load_tail(p, n);
}

// A row of n floats held in registers (flash_attention's scores, layer norm's features) is
// NV = ceil(n / W) vectors, at most kRowVectors; kernels for such rows are written for a constant
// NV, so that the compiler keeps the vectors in registers.
inline constexpr int kRowVectors = 8;

// Whether a row of n floats is held in registers: 1 to kRowVectors vectors.
inline bool row_fits(int64_t n) { return n > 0 && n <= kRowVectors * W; }

// Calls f(std::integral_constant<int, NV>{}) with NV the vectors that hold n floats, for a row
// that fits (row_fits).
template <int NV = 1, typename F>
void with_row_vectors(int64_t n, F&& f) {
  if constexpr (NV < kRowVectors)
    if (n > NV * W) return with_row_vectors<NV + 1>(n, f);
  f(std::integral_constant<int, NV>{});
}

// Vector c of NV over a row of n floats at x, and its store: the last vector loads and stores only
// the row's floats (`fill` in the other lanes). Forced inline: called out of line, a row's
// vectors went through memory.
template <int NV>
[[gnu::always_inline]] inline batch row_load(const float* x, int c, int64_t n, float fill = 0.0f) {
  return c + 1 < NV ? batch::load_unaligned(x + c * W) : load_tail(x + c * W, n - c * W, fill);
}
template <int NV>
[[gnu::always_inline]] inline void row_store(float* x, int c, int64_t n, const batch& v) {
  if (c + 1 < NV)
    v.store_unaligned(x + c * W);
  else
    store_tail(x + c * W, v, n - c * W);
}

// One thread's share of map, map2 and map3 below.

// y[i] = f(x[i]) for contiguous buffers (y may alias x).
template <typename F>
inline void map_range(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) store_tail(y + i, f(load_tail(x + i, n - i)), n - i);
}

// y[i] = f(a[i * sa], b[i * sb]) with sa, sb in {0, 1}: 0 repeats one value (a broadcast).
template <typename F>
inline void map2_range(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n,
                       F f) {
  auto load = [](const float* p, int64_t s, int64_t i) {
    return s == 0 ? batch(p[0]) : batch::load_unaligned(p + i);
  };
  int64_t i = 0;
  for (; i + W <= n; i += W) f(load(a, sa, i), load(b, sb, i)).store_unaligned(y + i);
  if (i < n)
    store_tail(
        y + i,
        f(load_tail_strided(a + i * sa, sa, n - i), load_tail_strided(b + i * sb, sb, n - i)),
        n - i);
}

// Three inputs, same stride rules (used by where() and by fused backward formulas).
template <typename F>
inline void map3_range(const float* a, int64_t sa, const float* b, int64_t sb, const float* c,
                       int64_t sc, float* y, int64_t n, F f) {
  auto load = [](const float* p, int64_t s, int64_t i) {
    return s == 0 ? batch(p[0]) : batch::load_unaligned(p + i);
  };
  int64_t i = 0;
  for (; i + W <= n; i += W)
    f(load(a, sa, i), load(b, sb, i), load(c, sc, i)).store_unaligned(y + i);
  if (i < n)
    store_tail(y + i,
               f(load_tail_strided(a + i * sa, sa, n - i), load_tail_strided(b + i * sb, sb, n - i),
                 load_tail_strided(c + i * sc, sc, n - i)),
               n - i);
}

// The elementwise loops, split between threads above kGrain elements (on W-aligned boundaries,
// so every element is computed by the same instructions whatever the split).
inline constexpr int64_t kGrain = 32768;

template <typename F>
inline void map(const float* x, float* y, int64_t n, F f) {
  parallel_for(
      n, kGrain, [&](int64_t b, int64_t e) { map_range(x + b, y + b, e - b, f); }, W);
}

template <typename F>
inline void map2(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n, F f) {
  parallel_for(
      n, kGrain,
      [&](int64_t i, int64_t e) { map2_range(a + i * sa, sa, b + i * sb, sb, y + i, e - i, f); },
      W);
}

template <typename F>
inline void map3(const float* a, int64_t sa, const float* b, int64_t sb, const float* c, int64_t sc,
                 float* y, int64_t n, F f) {
  parallel_for(
      n, kGrain,
      [&](int64_t i, int64_t e) {
        map3_range(a + i * sa, sa, b + i * sb, sb, c + i * sc, sc, y + i, e - i, f);
      },
      W);
}

// Sum of x[0..n) with W independent lanes (a fixed order, so the result is deterministic).
inline float sum(const float* x, int64_t n) {
  batch acc0(0.0f), acc1(0.0f);
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 += batch::load_unaligned(x + i);
    acc1 += batch::load_unaligned(x + i + W);
  }
  for (; i + W <= n; i += W) acc0 += batch::load_unaligned(x + i);
  float s = xsimd::hadd(acc0 + acc1);
  for (; i < n; ++i) s += x[i];
  return s;
}

// y[0..n) = the sum of `count` rows of n values stored one after another, added in row order:
// how the per-chunk partial sums of a parallel reduction over rows (a bias's gradient) are
// combined, the same way for a given thread count.
inline void sum_rows(const float* rows, int64_t count, int64_t n, float* y) {
  std::fill(y, y + n, 0.0f);
  for (int64_t r = 0; r < count; ++r)
    map2_range(y, 1, rows + r * n, 1, y, n, [](batch acc, batch v) { return acc + v; });
}

// Σ exp(x[i] - m), the denominator of a softmax whose row maximum is m. The tail batch is padded
// with -inf, whose exp is 0.
inline float sum_exp(const float* x, int64_t n, float m) {
  const batch mb(m);
  batch acc(0.0f);
  int64_t i = 0;
  for (; i + W <= n; i += W) acc += xsimd::exp(batch::load_unaligned(x + i) - mb);
  if (i < n) {
    alignas(64) float buf[W];
    std::fill(buf, buf + W, -std::numeric_limits<float>::infinity());
    std::memcpy(buf, x + i, sizeof(float) * (n - i));
    acc += xsimd::exp(batch::load_aligned(buf) - mb);
  }
  return xsimd::hadd(acc);
}

// The largest of x[0..n), or NaN if any is NaN (as torch.amax: NaN propagates; the SIMD and
// std::max comparisons alone would drop it depending on its place).
inline float max(const float* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
  if (n >= W) {
    batch acc = batch::load_unaligned(x);
    auto nan = xsimd::isnan(acc);
    for (i = W; i + W <= n; i += W) {
      const batch v = batch::load_unaligned(x + i);
      nan = nan || xsimd::isnan(v);
      acc = xsimd::max(acc, v);
    }
    if (xsimd::any(nan)) return std::numeric_limits<float>::quiet_NaN();
    alignas(64) float buf[W];
    acc.store_aligned(buf);
    for (int64_t k = 0; k < W; ++k) m = std::max(m, buf[k]);
  }
  for (; i < n; ++i) {
    if (std::isnan(x[i])) return x[i];
    m = std::max(m, x[i]);
  }
  return m;
}

// The largest lane of v (no NaN lanes: the callers check for those first).
inline float hmax(const batch& v) {
#ifdef __AVX512F__
  return _mm512_reduce_max_ps(v);
#else
  alignas(64) float buf[W];
  v.store_aligned(buf);
  return *std::max_element(buf, buf + W);
#endif
}

// max or min of two batches, NaN where either is NaN (the strided reductions' step).
template <bool is_max>
inline batch extremum(const batch& u, const batch& v) {
  const batch m = is_max ? xsimd::max(u, v) : xsimd::min(u, v);
  return xsimd::select(xsimd::isnan(u), u, xsimd::select(xsimd::isnan(v), v, m));
}

// Sum of (x[i] - c)^2, the core of variance and layer norm.
inline float sum_sq_dev(const float* x, int64_t n, float c) {
  batch acc(0.0f), cb(c);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    batch d = batch::load_unaligned(x + i) - cb;
    acc = xsimd::fma(d, d, acc);
  }
  float s = xsimd::hadd(acc);
  for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  return s;
}

// Sums of x[i] * y[r·sy + i] for r < R into d[r]: R independent chains of multiply-adds (few_rows
// takes four keys at a time), each summed the same way whatever R is.
template <int R>
inline void dots(const float* x, const float* y, int64_t sy, int64_t n, float* d) {
  batch acc[R];
  for (int r = 0; r < R; ++r) acc[r] = batch(0.0f);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const batch xv = batch::load_unaligned(x + i);
    for (int r = 0; r < R; ++r)
      acc[r] = xsimd::fma(xv, batch::load_unaligned(y + r * sy + i), acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    float s = xsimd::hadd(acc[r]);
    for (int64_t k = i; k < n; ++k) s += x[k] * y[r * sy + k];
    d[r] = s;
  }
}

// Sum of x[i] * y[i].
inline float dot(const float* x, const float* y, int64_t n) {
  float d;
  dots<1>(x, y, 0, n, &d);
  return d;
}

}  // namespace anatomy::simd
