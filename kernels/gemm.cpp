// A GotoBLAS/BLIS-style GEMM in three layers:
//   1. blocking: K in KC slices, N in NC panels, M in MC blocks, sized so a packed B panel
//      lives in L2/L3, a packed A block in L2 and one micro-panel of each in L1;
//   2. packing: A into MR-row and B into NR-column micro-panels, contiguous in the order the
//      micro-kernel reads them (this is also where strides, i.e. transposes, are absorbed);
//   3. the micro-kernel: an MR x NR tile of C held in registers, updated by one rank-1 FMA
//      per k: broadcast MR values of A, load NR values of B.
// Threads take chunks of C's rows, each running the one-thread algorithm on them (gemm_rows); up
// to 128 rows they split its columns (gemm_short). Each element of C is summed by one thread in a
// fixed k order, so results do not depend on the thread count.
// Up to 128 rows times Bᵀ row-major (a linear layer's forward), B is not packed at all: see
// weight_tiles and gemm_short_weights. Over 128 rows, a row-major A is not packed either: the
// micro-kernel broadcasts its values from A's rows (gemm_rows). A product for one thread with a
// short K and a row-major B packs nothing (gemm_tiny: attention's per-head products).
#include "kernels/gemm.hpp"

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>
#include "kernels/gelu_math.hpp"
#include "kernels/simd.hpp"
#include "kernels/xsimd.hpp"

namespace anatomy {

namespace {

using batch = xsimd::batch<float>;
constexpr int64_t W = static_cast<int64_t>(batch::size);
// 2 vectors wide; rows chosen so MR x 2 accumulators + 2 B vectors + 1 broadcast fit the
// register file (16 registers with AVX2, 32 with AVX-512).
constexpr int64_t NR = 2 * W;
constexpr int64_t MR = W >= 16 ? 8 : 6;
constexpr int64_t KC = 256;
constexpr int64_t MC_MAX = 128;
constexpr int64_t NC = 2048;

#ifdef __AVX2__
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd);
// Called only where MR is 6: with AVX-512 (MR 8) pack_a's `if constexpr` discards the call, and
// clang would report the function as never needed.
[[maybe_unused]] inline void pack_6x8(const float* src, int64_t lds, float* dst);
#endif

// Packs A[i0:i0+mc, k0:k0+kc] as MR-row micro-panels: panel p holds, for each k, MR values.
void pack_a(const float* A, int64_t rsa, int64_t csa, int64_t mc, int64_t kc, float* dst) {
  for (int64_t i = 0; i < mc; i += MR) {
    const int64_t rows = std::min(MR, mc - i);
#ifdef __AVX2__
    // A row-major (activations): MR rows of 8 consecutive k are transposed in registers, instead
    // of MR strided loads per k.
    if (csa == 1 && rows == MR) {
      int64_t k = 0;
      for (; k + 8 <= kc; k += 8) {
        if constexpr (MR == 8)
          transpose8x8(A + i * rsa + k, rsa, dst + k * MR, MR);
        else
          pack_6x8(A + i * rsa + k, rsa, dst + k * MR);
      }
      for (; k < kc; ++k)
        for (int64_t r = 0; r < MR; ++r) dst[k * MR + r] = A[(i + r) * rsa + k];
      dst += kc * MR;
      continue;
    }
#endif
    // Aᵀ row-major (a weight gradient's dYᵀ): each k's MR values lie side by side. A copy of a
    // constant size is a vector move or two; the loop below tests `rows` for every value.
    if (rsa == 1 && rows == MR) {
      for (int64_t k = 0; k < kc; ++k, dst += MR)
        std::memcpy(dst, A + i + k * csa, sizeof(float) * MR);
      continue;
    }
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = A + i * rsa + k * csa;
      int64_t r = 0;
      for (; r < rows; ++r) dst[r] = src[r * rsa];
      for (; r < MR; ++r) dst[r] = 0.0f;
      dst += MR;
    }
  }
}

// pack_a, but with `copy` (Aᵀ row-major, packed by the micro-kernels of the first panel as they
// read it: kCopyA) only a last panel of fewer than MR rows. Returns the rows left to the
// micro-kernels (0 without `copy`).
int64_t pack_a_ahead(const float* A, int64_t rsa, int64_t csa, int64_t mc, int64_t kc, float* dst,
                     bool copy) {
  const int64_t whole = copy ? mc / MR * MR : 0;
  if (whole < mc) pack_a(A + whole * rsa, rsa, csa, mc - whole, kc, dst + whole * kc);
  return whole;
}

#ifdef __AVX2__
// out[c] = (in[0][c], ..., in[7][c]): the usual unpack/shuffle/permute sequence, 24
// instructions where a scalar transpose of 8 x 8 takes 64 loads and 64 stores.
inline void transpose8(const __m256 in[8], __m256 out[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(in[i], in[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(in[i], in[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    out[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    out[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// dst[r * ldd + c] = src[c * lds + r] for an 8 x 8 block.
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], c[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  transpose8(r, c);
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * ldd, c[i]);
}

// dst[k * 6 + r] = src[r * lds + k] for 6 rows of 8 consecutive k: the 8 x 8 transpose with two
// rows of zeros, each k's 6 values stored as 4 and 2.
inline void pack_6x8(const float* src, int64_t lds, float* dst) {
  __m256 r[8], c[8];
  for (int i = 0; i < 6; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  r[6] = r[7] = _mm256_setzero_ps();
  transpose8(r, c);
  for (int k = 0; k < 8; ++k) {
    _mm_storeu_ps(dst + k * 6, _mm256_castps256_ps128(c[k]));
    _mm_storel_pi(reinterpret_cast<__m64*>(dst + k * 6 + 4), _mm256_extractf128_ps(c[k], 1));
  }
}
#endif

// Packs a row-major B[0:kc, 0:nc] as NR-column panels (kc x NR each, one after another), a row
// at a time: each k reads nc consecutive floats.
void pack_b_rows(const float* B, int64_t rsb, int64_t kc, int64_t nc, float* dst) {
  const int64_t full = nc / NR, rest = nc - full * NR;
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = B + k * rsb;
    float* d = dst + k * NR;
    for (int64_t p = 0; p < full; ++p)
      for (int64_t c = 0; c < NR; c += W)
        batch::load_unaligned(src + p * NR + c).store_aligned(d + p * kc * NR + c);
    if (rest) {
      float* e = d + full * kc * NR;
      std::memcpy(e, src + full * NR, sizeof(float) * rest);
      std::fill(e + rest, e + NR, 0.0f);
    }
  }
}

// Packs B[k0:k0+kc, j0:j0+nc] as NR-column micro-panels: panel p holds, for each k, NR values.
void pack_b(const float* B, int64_t rsb, int64_t csb, int64_t kc, int64_t nc, float* dst,
            int64_t panel_begin, int64_t panel_end) {
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int64_t j = p * NR;
    const int64_t cols = std::min(NR, nc - j);
    float* d = dst + p * NR * kc;
    if (csb == 1) {  // B row-major: this panel's cols floats of each row
      pack_b_rows(B + j, rsb, kc, cols, d);
      continue;
    }
    if (rsb == 1) {
      // Bᵀ stored row-major (linear's weight): a blocked transpose. Each step reads 16
      // consecutive k (one cache line) from each of the NR rows and fills 16 rows of the panel,
      // so both sides stay in L1.
      constexpr int64_t KB = 16;
      for (int64_t k0 = 0; k0 < kc; k0 += KB) {
        const int64_t kb = std::min(KB, kc - k0);
        int64_t done = 0;  // columns packed by the transposes
#ifdef __AVX2__
        // Whole 8 x 8 blocks: eight rows of 8 consecutive k, transposed in registers. An edge
        // panel too, up to its last multiple of 8 columns (attention's keys of a causal block
        // come 16 at a time). k outside, columns inside: each k's row of the panel is written
        // whole before the next, so that the writes fill whole cache lines.
        if (kb % 8 == 0) {
          done = cols / 8 * 8;
          for (int64_t k8 = k0; k8 < k0 + kb; k8 += 8)
            for (int64_t c = 0; c < done; c += 8)
              transpose8x8(B + (j + c) * csb + k8, csb, d + k8 * NR + c, NR);
        }
#endif
        for (int64_t c = done; c < NR; ++c) {
          float* dc = d + k0 * NR + c;
          if (c < cols) {
            const float* src = B + (j + c) * csb + k0;
            for (int64_t k = 0; k < kb; ++k) dc[k * NR] = src[k];
          } else {
            for (int64_t k = 0; k < kb; ++k) dc[k * NR] = 0.0f;
          }
        }
      }
      continue;
    }
    for (int64_t k = 0; k < kc; ++k) {  // B with no unit stride
      const float* src = B + k * rsb + j * csb;
      int64_t c = 0;
      for (; c < cols; ++c) d[c] = src[c * csb];
      for (; c < NR; ++c) d[c] = 0.0f;
      d += NR;
    }
  }
}

// d[0:n] = act(c[0:n]). The form is chosen once per row, so that the loop inlines it.
void activate_row(const GemmActivation& act, const float* c, float* d, int64_t n) {
  if (act.kind == GemmActivation::Kind::GeluErf)
    simd::map_range(c, d, n, [](batch x) { return gelu_math::gelu_erf(x); });
  else
    simd::map_range(c, d, n, [](batch x) { return gelu_math::gelu_tanh(x); });
}

// Asks for the cache lines of the MR x NR tile of C at C, to be written: the micro-kernel
// writes (and, accumulating, reads) its tile only after its loop over K, and a C of several MiB
// (a weight gradient over 128 tokens) is in no cache by then, so the stores would wait for
// memory. Asked before the loop, the lines arrive while it runs. A row of the tile covers two
// lines, or three when it does not start a line; c == NR reaches the third, and asks for the
// line after the row when the row starts a line (harmless: a prefetch never faults).
inline void prefetch_tile(const float* C, int64_t ldc) {
#pragma GCC unroll 8
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t c = 0; c <= NR; c += W) __builtin_prefetch(C + r * ldc + c, 1);
}

// C[0:R, 0:NR] (+)= A · Bpanel over kc, plus bias[0:NR] on every row when bias is given.
// A is R values side by side for each k, lda floats from one k to the next (a packed
// micro-panel: lda = MR; Aᵀ row-major where it lies: lda = its row stride), or with kRowMajorA
// A's rows where they lie, lda floats apart. B is NR values side by side for each k: a packed
// panel (aligned, NR floats from one k to the next), or with kBHere a row-major B where it lies
// (ldb floats from one k to the next, any alignment). R is MR but in a last panel of fewer rows,
// which computes only those (128 rows are 21 panels of 6 and one of 2: as 6 rows, the last
// computed 4 rows of nothing). Full tiles write C directly; edge tiles go through a stack buffer
// and copy back only the valid rows and columns. kNarrow: a tile of at most W columns (the last
// panel of an output layer of 69 characters has 5), which needs only the first vector of each row:
// half the work. kCopyA: A, read where it lies as MR values side by side, is also written to
// a_copy as a packed micro-panel, for the tiles of the next panels to read (see gemm_short).
template <int R, bool kNarrow, bool kRowMajorA, bool kBHere, bool kCopyA = false>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C,
                  int64_t ldc, int64_t cols, bool accumulate, const float* bias,
                  float* a_copy = nullptr) {
  static_assert(!kCopyA || (R == MR && !kRowMajorA), "copies a whole panel of Aᵀ's values");
  constexpr int64_t kAheadA = 32, kAheadB = 16;
  batch c0[R], c1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = batch(0.0f);
  if (R == MR && cols == NR) prefetch_tile(C, ldc);
  const float* ar[R];  // kRowMajorA: A's rows where they lie
  if constexpr (kRowMajorA)
    for (int r = 0; r < R; ++r) ar[r] = a + r * lda;
  for (int64_t k = 0; k < kc; ++k) {
    // A packed or Aᵀ, and B packed, asked for 32 and 16 k ahead (past a panel's end a prefetch
    // never faults), as weight_tiles does.
    if constexpr (!kRowMajorA) __builtin_prefetch(a + kAheadA * lda, 0, 3);
    if constexpr (!kBHere) {
      __builtin_prefetch(b + kAheadB * NR, 0, 3);
      __builtin_prefetch(b + kAheadB * NR + W, 0, 3);
    }
    const batch b0 = kBHere ? batch::load_unaligned(b) : batch::load_aligned(b);
    if constexpr (kCopyA) {
      std::memcpy(a_copy, a, sizeof(float) * MR);
      a_copy += MR;
    }
    auto a_at = [&](int r) { return kRowMajorA ? batch(ar[r][k]) : batch(a[r]); };
    if constexpr (kNarrow) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) c0[r] = xsimd::fma(a_at(r), b0, c0[r]);
    } else {
      const batch b1 = kBHere ? batch::load_unaligned(b + W) : batch::load_aligned(b + W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const batch av = a_at(r);
        c0[r] = xsimd::fma(av, b0, c0[r]);
        c1[r] = xsimd::fma(av, b1, c1[r]);
      }
    }
    if constexpr (!kRowMajorA) a += lda;
    b += kBHere ? ldb : NR;
  }
  if (!kNarrow && cols == NR) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* cr = C + r * ldc;
      if (accumulate) {
        c0[r] += batch::load_unaligned(cr);
        c1[r] += batch::load_unaligned(cr + W);
      }
      if (bias) {
        c0[r] += batch::load_unaligned(bias);
        c1[r] += batch::load_unaligned(bias + W);
      }
      c0[r].store_unaligned(cr);
      c1[r].store_unaligned(cr + W);
    }
    return;
  }
  // Unrolled, so that c0 and c1 stay registers: with this loop rolled, GCC keeps both arrays on
  // the stack for every tile (16 stores to zero them, 16 more and 16 loads after the K loop).
  alignas(64) float tile[R * NR];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    c0[r].store_aligned(tile + r * NR);
    c1[r].store_aligned(tile + r * NR + W);
  }
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float v = accumulate ? C[r * ldc + c] + tile[r * NR + c] : tile[r * NR + c];
      C[r * ldc + c] = bias ? v + bias[c] : v;
    }
}

// Where the micro-kernel reads A: a packed micro-panel; A's rows where they lie (lda floats
// apart; 0 repeats one row); or Aᵀ's rows where they lie (a weight gradient's dYᵀ: each k's
// values side by side, lda floats from one k to the next). A short last panel reads only its
// rows, since the micro-kernel computes `rows` rows.
enum class ALayout { kPacked, kRows, kColumns };

// Where the micro-kernel reads B: a packed panel (NR floats per k, aligned), or with `here` a
// row-major B where it lies, ldb floats from one k to the next. A flag, not a stride that means
// "packed": a B in place may have any row stride and alignment.
struct BWhere {
  bool here = false;
  int64_t ldb = NR;
};

// The micro-kernel for a tile of `rows` rows (R counts down to it) and `cols` columns (see
// kNarrow), reading A as `layout` says and B as `bw` says. With a_copy (A in kColumns, MR rows, B
// packed), A is also packed there as it is read (kCopyA).
template <int R = static_cast<int>(MR)>
void micro_tile(int64_t kc, const float* a, ALayout layout, int64_t lda, const float* b, float* C,
                int64_t ldc, int64_t rows, int64_t cols, bool accumulate, const float* bias,
                const BWhere& bw = {}, float* a_copy = nullptr) {
  if constexpr (R > 1) {
    if (rows < R)
      return micro_tile<R - 1>(kc, a, layout, lda, b, C, ldc, rows, cols, accumulate, bias, bw);
  }
  if constexpr (R == MR) {
    if (a_copy) {
      if (cols <= W)
        micro_kernel<R, true, false, false, true>(kc, a, lda, b, NR, C, ldc, cols, accumulate, bias,
                                                  a_copy);
      else
        micro_kernel<R, false, false, false, true>(kc, a, lda, b, NR, C, ldc, cols, accumulate,
                                                   bias, a_copy);
      return;
    }
  }
  const int64_t step = layout == ALayout::kPacked ? MR : lda;
  auto run = [&]<bool kNarrow, bool kRowMajorA>() {
    if (bw.here)
      micro_kernel<R, kNarrow, kRowMajorA, true>(kc, a, step, b, bw.ldb, C, ldc, cols, accumulate,
                                                 bias);
    else
      micro_kernel<R, kNarrow, kRowMajorA, false>(kc, a, step, b, NR, C, ldc, cols, accumulate,
                                                  bias);
  };
  if (layout != ALayout::kRows) {
    if (cols <= W)
      run.template operator()<true, false>();
    else
      run.template operator()<false, false>();
  } else {
    if (cols <= W)
      run.template operator()<true, true>();
    else
      run.template operator()<false, true>();
  }
}

// d = act(C) over rows [0, rows) and columns [0, cols): a product's activation, applied by the
// drivers once a block of C holds its final sums (still in cache), not inside the micro-kernel,
// whose registers its loop over K needs.
void activate_block(const GemmActivation& act, const float* C, int64_t ldc, float* d, int64_t rows,
                    int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) activate_row(act, C + r * ldc, d + r * act.ldo, cols);
}

// Aligned scratch buffers, kept per thread and reused across calls.
float* scratch(std::vector<float, xsimd::aligned_allocator<float, 64>>& buf, size_t n) {
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// c[0 : R·W) += Σ_k a[k] · b[k·rsb : k·rsb + R·W), each column's multiply-adds in k order,
// with the R vectors of c held in registers over the whole loop.
template <int R>
void accumulate_columns(const float* a, int64_t K, const float* b, int64_t rsb, float* c) {
  batch acc[R];
  for (int r = 0; r < R; ++r) acc[r] = batch::load_unaligned(c + r * W);
  for (int64_t k = 0; k < K; ++k) {
    const batch ak(a[k]);
    for (int r = 0; r < R; ++r)
      acc[r] = xsimd::fma(ak, batch::load_unaligned(b + k * rsb + r * W), acc[r]);
  }
  for (int r = 0; r < R; ++r) acc[r].store_unaligned(c + r * W);
}

// C[0:M, cols j0:j1] (+)= A · B for the few-row case, reading B where it lies. Two layouts
// keep each inner loop contiguous: B's columns contiguous (Bᵀ row-major, e.g. attention's keys)
// give one dot product per element of C; B's rows contiguous (e.g. the values) give one
// C row += a · B row per k.
void few_rows(int64_t M, int64_t j0, int64_t j1, int64_t K, const float* A, int64_t rsa,
              const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
              const float* bias, const GemmActivation* act) {
  if (rsb == 1) {
    auto put = [&](int64_t i, int64_t j, float d) {
      const float v = accumulate ? C[i * ldc + j] + d : d;
      C[i * ldc + j] = bias ? v + bias[j] : v;
    };
    for (int64_t i = 0; i < M; ++i) {
      // Four dot products at a time: four independent chains of multiply-adds where one
      // waited on the last (each summed as simd::dot sums it).
      int64_t j = j0;
      for (; j + 4 <= j1; j += 4) {
        float d[4];
        simd::dots<4>(A + i * rsa, B + j * csb, csb, K, d);
        for (int r = 0; r < 4; ++r) put(i, j + r, d[r]);
      }
      for (; j < j1; ++j) put(i, j, simd::dot(A + i * rsa, B + j * csb, K));
    }
    if (act)
      for (int64_t i = 0; i < M; ++i)
        activate_row(*act, C + i * ldc + j0, act->out + i * act->ldo + j0, j1 - j0);
    return;
  }
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc + j0;
    // Without accumulation the sums start at the bias, the value the epilogue would add.
    if (!accumulate) {
      if (bias)
        std::copy(bias + j0, bias + j1, c);
      else
        std::fill(c, c + (j1 - j0), 0.0f);
    } else if (bias) {
      simd::map2_range(c, 1, bias + j0, 1, c, j1 - j0,
                       [](simd::batch cv, simd::batch bv) { return cv + bv; });
    }
    // The columns in whole vectors keep their sums in registers across k: through memory,
    // each multiply-add waited on the store of the one before (a decoding step's weighted
    // values, 1 x 32 x keys, spent most of its time there).
    const float* a = A + i * rsa;
    const int64_t n = j1 - j0;
    int64_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W) accumulate_columns<4>(a, K, B + j0 + j, rsb, c + j);
    for (; j + W <= n; j += W) accumulate_columns<1>(a, K, B + j0 + j, rsb, c + j);
    for (int64_t k = 0; j < n && k < K; ++k) {
      const simd::batch ak(a[k]);
      simd::map2_range(c + j, 1, B + k * rsb + j0 + j, 1, c + j, n - j,
                       [&](simd::batch cv, simd::batch bv) { return xsimd::fma(ak, bv, cv); });
    }
    if (act) activate_row(*act, c, act->out + i * act->ldo + j0, j1 - j0);
  }
}

// Rows that fit one M block (a sentence's tokens) times a B not packed ahead. The threads split
// N, and each packs all of A once, then walks its columns in blocks of kShortBlockPanels panels,
// usually with all of K inside each block, so that the block of C stays in L2 across the K slices
// (with NC-column blocks each K slice would read and write a wide C from L3); or, when all of A is
// bigger than the thread's columns of C (a long K), with the K slices outside (see slices_outer).
// Each panel of B is packed right before its micro-kernels, which then read it from L1. One
// fork/join per product. Every element of C sums its K slices in the order of the general path
// below, so the bits are the same.
constexpr int64_t kShortBlockPanels = 8;
// Packed A is kept per thread: up to 128 x 4096 floats (2 MiB). A longer K (a product with a
// vocabulary-sized inner dimension) takes the general path, which packs one K slice at a time.
constexpr int64_t kShortMaxK = 4096;

// fn(begin, end) once per thread, on `threads` contiguous shares of [0, n) (empty when n <
// threads): one call per thread, so that each packs its A once.
template <typename F>
void thread_shares(int64_t n, int threads, F&& fn) {
  if (threads == 1) return fn(0, n);
  parallel_for(threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) fn(n * t / threads, n * (t + 1) / threads);
  });
}

// Asks for the cache lines that pack_b reads for the panel B[0:kc, 0:cols]. gemm_short packs
// each panel right before its micro-kernels, and a large B (BERT-base's weights: 340 MB in one
// forward) comes from memory, so the packing would wait on every line. Asked one panel ahead, the
// lines arrive while the current panel's micro-kernels run.
void prefetch_b_panel(const float* B, int64_t rsb, int64_t csb, int64_t kc, int64_t cols) {
  constexpr int64_t kLine = 64 / sizeof(float);
  if (rsb == 1) {  // Bᵀ row-major: `cols` rows of kc consecutive floats
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t k = 0; k < kc + kLine; k += kLine)  // one past: a row may start mid-line
        __builtin_prefetch(B + c * csb + std::min(k, kc - 1), 0, 2);
  } else {  // `cols` floats of each of kc rows
    for (const float* row = B; row < B + kc * rsb; row += rsb) {
      __builtin_prefetch(row, 0, 2);
      __builtin_prefetch(row + (cols - 1) * csb, 0, 2);
    }
  }
}

// A number for each product that packs an operand per thread, so that a thread can tell whether
// its buffer holds this product's packing (a buffer at the same address may hold new values).
uint64_t new_call() {
  static std::atomic<uint64_t> calls{0};
  return calls.fetch_add(1, std::memory_order_relaxed) + 1;
}

// One thread's packing of an operand for the chunks it claims of one call: packed for its first
// chunk of the call, reused for the others.
struct PackedPerCall {
  std::vector<float, xsimd::aligned_allocator<float, 64>> buf;
  uint64_t call = 0;  // the call whose packing buf holds
  // buf, `floats` long, holding call `for_call`'s packing (pack(dst) writes it).
  template <typename Pack>
  float* get(uint64_t for_call, int64_t floats, Pack pack) {
    float* dst = scratch(buf, static_cast<size_t>(floats));
    if (call != for_call) {
      pack(dst);
      call = for_call;
    }
    return dst;
  }
};

// One KC slice of one tile of weight_tiles against one token panel: MR rows of w (wr, each at
// the slice's first k) broadcast against the panel's packed Aᵀ (ap, NR values per k), summed in
// registers, then added to `total` (MR x NR) when `add`, with bias[r] (up to row rows - 1) when
// bias is given, and stored there. With `next`, a line of each of those rows is asked for
// every 16 k. A function of its own: inlined in weight_tiles' loops over tiles and panels, GCC
// 12 keeps some of the sixteen sums on the stack.
[[gnu::noinline]] void weight_panel(int64_t kc, const float* ap, const float* const wr[],
                                    const float* const next[], float* total, bool add,
                                    const float* bias, int64_t rows) {
  constexpr int64_t kAhead = 16 * NR;  // floats of a panel asked for ahead: 16 k
  batch c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int64_t r = 0; r < MR; ++r) c0[r] = c1[r] = batch(0.0f);
  // Without this, GCC let the loop run zero times, and merged its sums with the zeros through
  // the stack: 16 stores and 16 loads after every panel (kc is at least 1: a slice of K).
  if (kc <= 0) __builtin_unreachable();
  for (int64_t k = 0; k < kc; ++k, ap += NR) {
    __builtin_prefetch(ap + kAhead, 0, 3);  // past the panel's end: a prefetch never faults
    __builtin_prefetch(ap + kAhead + W, 0, 3);
    if (next && k % 16 == 0) {
#pragma GCC unroll 8
      for (int64_t r = 0; r < MR; ++r) __builtin_prefetch(next[r] + k, 0, 3);
    }
    const batch b0 = batch::load_aligned(ap), b1 = batch::load_aligned(ap + W);
#pragma GCC unroll 8
    for (int64_t r = 0; r < MR; ++r) {
      const batch x(wr[r][k]);
      c0[r] = xsimd::fma(x, b0, c0[r]);
      c1[r] = xsimd::fma(x, b1, c1[r]);
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < MR; ++r) {
    float* tr = total + r * NR;
    if (add) {
      c0[r] += batch::load_aligned(tr);
      c1[r] += batch::load_aligned(tr + W);
    }
    if (bias) {
      const batch br(bias[std::min(r, rows - 1)]);
      c0[r] += br;
      c1[r] += br;
    }
    c0[r].store_aligned(tr);
    c1[r].store_aligned(tr + W);
  }
}

// Tiles of MR rows of w that weight_tiles computes together.
constexpr int64_t kWeightTiles = 8;

// A group of up to kWeightTiles tiles of the product with B given as Bᵀ row-major (a linear
// layer's weight w [N, K]; `rows` rows from w), turned around: MR rows of w, read where they lie
// and broadcast, times all M tokens of the packed Aᵀ `a` (NR-token panels, NR * K floats apart;
// for each k, NR values), so w is never packed. Each tile holds Cᵀ, one MR x NR total per token
// panel; it sums each KC slice in registers and adds it to the slices before as the packed path
// does (slice 0 to C when accumulating, then the bias; each later slice to the running sum), so
// the bits are the same. Then Cᵀ goes to C (and act(C) to d) by 8 x 8 transposes.
// The K slices are the outer loop: a slice of a tile's rows (8 KiB) comes from memory for the
// first token panel and from L1 for the others, where with the panels outer each panel would
// read all of the rows again (96 KiB for K = 3072, from L2). Each panel's values of Aᵀ are asked
// for 16 k ahead: the hardware's own prefetching leaves the loads waiting.
// The first panel of a slice also asks for the tile's rows of the next slice (or of the next
// group's tile): rows of 768 are short streams (3 KiB), which the hardware's prefetching fetches
// late.
// The tiles of a group share each slice of Aᵀ (128 KiB for 128 tokens), from L2, instead of all of
// Aᵀ (1.5 MiB for K = 3072) going through L2 for each tile. And a group writes whole cache lines
// of C, 8 tokens at a time: tile by tile, each would write 32 bytes of a line in M rows, and with
// rows 12 KiB apart (3072 columns) all M lines fall in one set of L1, so each line would be read
// again for the next tile's 32 bytes.
void weight_tiles(int64_t K, const float* a, int64_t M, const float* w, int64_t ldw, float* C,
                  int64_t ldc, int64_t rows, bool accumulate, const float* bias,
                  const GemmActivation* act, float* d) {
  const int64_t panels = (M + NR - 1) / NR, tiles = (rows + MR - 1) / MR;
  alignas(64) float totals[kWeightTiles][MC_MAX / NR][MR * NR];  // 32 KiB
  auto tokens = [&](int64_t ip) { return std::min(NR, M - ip * NR); };
  auto tile_rows = [&](int64_t g) { return std::min(MR, rows - g * MR); };
  if (accumulate)  // the sums start from Cᵀ
    for (int64_t g = 0; g < tiles; ++g)
      for (int64_t ip = 0; ip < panels; ++ip)
        for (int64_t r = 0; r < MR; ++r)
          for (int64_t t = 0; t < NR; ++t)
            totals[g][ip][r * NR + t] =
                r < tile_rows(g) && t < tokens(ip) ? C[(ip * NR + t) * ldc + g * MR + r] : 0.0f;
  for (int64_t pc = 0; pc < K; pc += KC) {
    const int64_t kc = std::min(KC, K - pc);
    for (int64_t g = 0; g < tiles; ++g) {
      // The slice of the tile's rows (rows past its last repeat it: their sums are not
      // written), and the one after: the next slice's, or after the last the next group's.
      const float* wr[MR];
      const float* next[MR];
      for (int64_t r = 0; r < MR; ++r) {
        const float* row = w + (g * MR + std::min(r, tile_rows(g) - 1)) * ldw;
        wr[r] = row + pc;
        next[r] = pc + KC < K ? row + pc + KC : row + kWeightTiles * MR * ldw;
      }
      const float* tile_bias = pc == 0 && bias ? bias + g * MR : nullptr;
      for (int64_t ip = 0; ip < panels; ++ip)
        weight_panel(kc, a + ip * NR * K + pc * NR, wr, ip == 0 ? next : nullptr, totals[g][ip],
                     pc > 0 || accumulate, tile_bias, tile_rows(g));
    }
  }
  alignas(64) float activated[kWeightTiles][MR * NR];
  for (int64_t ip = 0; ip < panels; ++ip) {
    float* Cp = C + ip * NR * ldc;
    float* dp = d ? d + ip * NR * act->ldo : nullptr;
    // act(C) goes to d or, when d is C itself (the pre-activation not wanted), over the sums.
    const bool over = dp == Cp;
    if (dp)
      for (int64_t g = 0; g < tiles; ++g)
        activate_row(*act, totals[g][ip], over ? totals[g][ip] : activated[g], MR * NR);
    if (over) dp = nullptr;
    int64_t done = 0;  // tokens written by the transposes, in every whole tile
    const int64_t whole = rows / MR;
#ifdef __AVX2__
    if constexpr (MR == 8) {
      for (; done + 8 <= tokens(ip); done += 8)
        for (int64_t g = 0; g < whole; ++g) {
          transpose8x8(totals[g][ip] + done, NR, Cp + done * ldc + g * MR, ldc);
          if (dp) transpose8x8(activated[g] + done, NR, dp + done * act->ldo + g * MR, act->ldo);
        }
    }
#endif
    for (int64_t g = 0; g < tiles; ++g)
      for (int64_t t = g < whole ? done : 0; t < tokens(ip); ++t)
        for (int64_t r = 0; r < tile_rows(g); ++r) {
          Cp[t * ldc + g * MR + r] = totals[g][ip][r * NR + t];
          if (dp) dp[t * act->ldo + g * MR + r] = activated[g][r * NR + t];
        }
  }
}

// gemm_short for Bᵀ row-major (see weight_tiles): Aᵀ is packed once per thread, as NR-token
// panels, and the threads claim chunks of w's rows as they finish the last, a few chunks each
// (parallel_for), not one fixed half each: the two vCPUs of a cloud machine are not always
// equally fast, and with fixed halves the faster would wait for the slower. A thread packs Aᵀ for
// its first chunk of a call and reuses it for its other chunks (PackedPerCall).
void gemm_short_weights(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
                        const float* w, int64_t ldw, float* C, int64_t ldc, bool accumulate,
                        const float* bias, const GemmActivation* act, int threads) {
  const int64_t token_panels = (M + NR - 1) / NR;
  const int64_t tiles = (N + MR - 1) / MR;
  const uint64_t call = new_call();
  auto rows = [&](int64_t t_begin, int64_t t_end) {
    static thread_local PackedPerCall packed_a;
    const float* ap = packed_a.get(call, token_panels * NR * K, [&](float* dst) {
      pack_b(A, csa, rsa, K, M, dst, 0, token_panels);  // Aᵀ: K x M, in NR-column panels
    });
    for (int64_t t = t_begin; t < t_end; t += kWeightTiles) {
      const int64_t j = t * MR;
      weight_tiles(K, ap, M, w + j * ldw, ldw, C + j, ldc,
                   std::min(std::min(t_end - t, kWeightTiles) * MR, N - j), accumulate,
                   bias ? bias + j : nullptr, act, act ? act->out + j : nullptr);
    }
  };
  if (threads == 1) return rows(0, tiles);
  parallel_for(tiles, 1, rows);
}

// Rows of A a thread most likely works on next (`count` rows from `a`, with A's strides), for
// prefetching; none when `a` is null.
struct Rows {
  const float* a = nullptr;
  int64_t count = 0;
};

// The chunks of parallel_for(n, grain, ...), bounded as it bounds them, and the chunk that the
// thread running one most likely claims next: the caller claims from the front and the workers
// from the back (parallel.hpp), so the caller's next is the chunk after and a worker's the chunk
// before. A guess, used only to ask for cache lines early: when it is wrong, a few loads are
// wasted.
class ChunkOrder {
 public:
  ChunkOrder(int64_t n, int64_t grain)
      : n_(n), chunks_(parallel_chunks(n, grain)), caller_(std::this_thread::get_id()) {}
  // [first, last) of the chunk likely claimed after the one that starts at `begin`; first ==
  // last: none.
  std::pair<int64_t, int64_t> next(int64_t begin) const {
    int64_t c = 0;
    while (c < chunks_ && bound(c) != begin) ++c;
    const int64_t after = std::this_thread::get_id() == caller_ ? c + 1 : c - 1;
    if (after < 0 || after >= chunks_) return {n_, n_};
    return {bound(after), bound(after + 1)};
  }

 private:
  int64_t bound(int64_t c) const { return parallel_chunk_begin(n_, chunks_, c); }
  int64_t n_, chunks_;
  std::thread::id caller_;
};

// Asks for the cache lines of `rows` rows of B (rsb floats apart, `cols` floats each), a share
// at each call of step(), `steps` calls in all: spread over the micro-kernels it runs beside, so
// that the requests do not all wait for the same few free slots at once.
struct RowPrefetcher {
  const float* B = nullptr;  // none: step() does nothing
  int64_t rsb = 0, rows = 0, cols = 0, steps = 1;
  int64_t taken = 0, asked = 0;  // steps taken, rows asked for
  void step() {
    if (!B) return;
    for (const int64_t upto = rows * ++taken / steps; asked < upto; ++asked) {
      const float* row = B + asked * rsb;
      for (int64_t c = 0; c < cols; c += 64 / sizeof(float)) __builtin_prefetch(row + c, 0, 2);
      __builtin_prefetch(row + cols - 1, 0, 2);  // the last line, when the row starts mid-line
    }
  }
};

// One packed panel of B (`cols` columns, C's from Cj) against each MR-row tile of A's K slice:
// A packed at `packed`, except the tiles above row `whole` of a thread's first panel (copy),
// which the micro-kernel reads where they lie (from a_slice) and packs there as it goes.
[[gnu::always_inline]] inline void short_panel(int64_t M, int64_t kc, const float* a_slice,
                                               int64_t csa, float* packed, bool copy_first,
                                               int64_t whole, const float* panel, float* Cj,
                                               int64_t ldc, int64_t cols, bool accumulate,
                                               const float* bias, RowPrefetcher& ahead) {
  for (int64_t ir = 0; ir < M; ir += MR) {
    ahead.step();
    const bool copy = copy_first && ir < whole;
    micro_tile(kc, copy ? a_slice + ir : packed + ir * kc,
               copy ? ALayout::kColumns : ALayout::kPacked, csa, panel, Cj + ir * ldc, ldc,
               std::min(MR, M - ir), cols, accumulate, bias, {}, copy ? packed + ir * kc : nullptr);
  }
}

void gemm_short(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
                const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
                const float* bias, const GemmActivation* act, int threads) {
  const int64_t m_round = (M + MR - 1) / MR * MR;
  const int64_t panels = (N + NR - 1) / NR;
  // B read by rows of a block or more (an input gradient dY·W, a weight gradient's X): the
  // block's panels are packed together, row by row, and the rows the next packing reads are
  // asked for while this one's micro-kernels run. Packed a panel at a time, each of a slice's
  // 256 rows would give 64 bytes, rows 12 KiB apart for 128 x 768 x 3072 NN, and the loads would
  // wait on memory. Rows of exactly one block (X of 128 features in a weight gradient) are then
  // read in one run.
  const bool long_rows = csb == 1 && rsb >= kShortBlockPanels * NR;
  const bool copy_a = rsa == 1;  // Aᵀ packed by the micro-kernels (see below)
  auto columns = [&](int64_t p_begin, int64_t p_end) {
    if (p_begin == p_end) return;  // fewer panels than threads
    static thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> a_buf, b_buf;
    float* bp = scratch(b_buf, static_cast<size_t>(KC * NR * (long_rows ? kShortBlockPanels : 1)));
    // A is packed once, all of K (slice pc at pc * m_round). Aᵀ row-major (a weight gradient's
    // dYᵀ: each k's MR values side by side) is packed by the micro-kernels of each slice's first
    // panel as they read it where it lies (kCopyA), and only a last panel of fewer than MR rows
    // here: no pass of its own over A, and the other panels read A packed, not a new cache line
    // per k.
    float* ap = scratch(a_buf, static_cast<size_t>(m_round * K));
    int64_t whole = 0;  // rows packed by the micro-kernels
    for (int64_t pc = 0; pc < K; pc += KC)
      whole =
          pack_a_ahead(A + pc * csa, rsa, csa, M, std::min(KC, K - pc), ap + pc * m_round, copy_a);
    // The (block, K slice) pairs in one of two orders. Blocks outer: a block's slices one after
    // another, so that its block of C stays in L2 while all of A is read once per block. Slices
    // outer: every block of one slice, then the next slice, so that A's slice stays in cache while
    // C is read once per slice. Both read the same number of floats again; the order picks which
    // operand that is, and the smaller one comes from L2: A when it is the smaller, C when all of
    // A is bigger than this thread's columns of C (128 x 3072 x 768 NN packs 1.5 MiB of A and
    // writes 384 KiB of C). Each element of C still sums its slices in order: the same bits.
    const int64_t slices = (K + KC - 1) / KC;
    const int64_t blocks = (p_end - p_begin + kShortBlockPanels - 1) / kShortBlockPanels;
    const int64_t steps = slices * blocks;
    const bool slices_outer = long_rows && m_round * K > M * (p_end - p_begin) * NR;
    auto at = [&](int64_t step) {  // the first panel of the step's block, its slice's first k
      if (step == steps) return std::pair{p_end, int64_t{0}};  // past the last: nothing next
      const int64_t b = slices_outer ? step % blocks : step / slices;
      const int64_t s = slices_outer ? step / blocks : step % slices;
      return std::pair{p_begin + b * kShortBlockPanels, s * KC};
    };
    for (int64_t step = 0; step < steps; ++step) {
      const auto [p0, pc] = at(step);
      const auto [next_p0, next_pc] = at(step + 1);  // packed next
      const int64_t p1 = std::min(p_end, p0 + kShortBlockPanels), kc = std::min(KC, K - pc);
      const bool last = pc + kc == K;  // the activation goes on the final sums
      RowPrefetcher ahead;
      if (long_rows) {
        pack_b_rows(B + pc * rsb + p0 * NR, rsb, kc, std::min(N, p1 * NR) - p0 * NR, bp);
        if (next_p0 < p_end)
          ahead = {B + next_pc * rsb + next_p0 * NR, rsb, std::min(KC, K - next_pc),
                   std::min(N, std::min(p_end, next_p0 + kShortBlockPanels) * NR) - next_p0 * NR,
                   (p1 - p0) * ((M + MR - 1) / MR)};
      }
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j = p * NR, cols = std::min(NR, N - j);
        const float* panel = long_rows ? bp + (p - p0) * kc * NR : bp;
        if (!long_rows) {
          pack_b(B + pc * rsb + j * csb, rsb, csb, kc, cols, bp, 0, 1);
          // The panel packed next: the next one of this block, else the next step's first.
          const bool in_block = p + 1 < p1;
          const int64_t next_p = in_block ? p + 1 : next_p0, next_k = in_block ? pc : next_pc;
          if (next_p < p_end)
            prefetch_b_panel(B + next_k * rsb + next_p * NR * csb, rsb, csb,
                             std::min(KC, K - next_k), std::min(NR, N - next_p * NR));
        }
        // The first panel a thread visits in a slice is p_begin, in either order of the steps.
        short_panel(M, kc, A + pc * csa, csa, ap + pc * m_round, p == p_begin, whole, panel, C + j,
                    ldc, cols, accumulate || pc > 0, pc == 0 && bias ? bias + j : nullptr, ahead);
      }
      if (act && last)  // the block's columns hold their final sums
        activate_block(*act, C + p0 * NR, ldc, act->out + p0 * NR, M,
                       std::min(N, p1 * NR) - p0 * NR);
    }
  };
  thread_shares(panels, threads, columns);
}

// A product for one thread with a short K (up to kTinyMaxK) and an A the micro-kernel can read
// where it lies (rows, or Aᵀ's rows): attention's per-head products over at most 64 keys. A is
// read where it lies, and so is a row-major B of whole vectors of columns (a tile's loads never
// pass the last column: weights · V, dS · K, dSᵀ · Q, aᵀ · dO); Bᵀ row-major (the keys of Q · Kᵀ,
// the values of dO · Vᵀ) is packed, all of it at once. With so short a K, packing both operands
// would cost as much as the multiply-adds. The tiles are the packed path's and sum the same
// terms in the same order, so the bits are the same.
constexpr int64_t kTinyMaxK = 64;
constexpr int64_t kTinyMaxN = 1024;  // a packed Bᵀ: at most 64 x 1024 floats

bool tiny(int64_t M, int64_t N, int64_t K, int64_t rsa, int64_t csa, int64_t rsb, int64_t csb) {
  return M <= MC_MAX && K <= kTinyMaxK && (csa == 1 || rsa == 1) &&
         ((csb == 1 && N % W == 0) || (rsb == 1 && N <= kTinyMaxN));
}

void gemm_tiny(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
               const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
               const float* bias) {
  const bool b_here = csb == 1 && N % W == 0;
  const float* bp = B;
  if (!b_here) {
    static thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> b_buf;
    const int64_t panels = (N + NR - 1) / NR;
    float* packed = scratch(b_buf, static_cast<size_t>(panels * NR * K));
    pack_b(B, rsb, csb, K, N, packed, 0, panels);
    bp = packed;
  }
  const bool rows_a = csa == 1;
  for (int64_t j = 0; j < N; j += NR)
    for (int64_t i = 0; i < M; i += MR)
      micro_tile(K, A + i * rsa, rows_a ? ALayout::kRows : ALayout::kColumns, rows_a ? rsa : csa,
                 b_here ? B + j : bp + j * K, C + i * ldc + j, ldc, std::min(MR, M - i),
                 std::min(NR, N - j), accumulate, bias ? bias + j : nullptr,
                 b_here ? BWhere{true, rsb} : BWhere{});
}

// The general path on one thread: for each NC block of columns and KC slice, B packed once,
// then each MC block of rows runs the micro-kernels over B's panels. A row-major A (activations)
// is read where it lies, its rows' values broadcast as the packed panel's would be: the same
// sums in the same order, without a copy of A per block. A with no unit stride along K (a weight
// gradient's dYᵀ) is packed. `next`: rows of A this thread likely packs after this call, asked
// for during its last block (see gemm).
void gemm_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
               const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
               const float* packed_b, const float* bias, const GemmActivation* act,
               const Rows& next = {}) {
  const int64_t mc_block = std::min<int64_t>(MC_MAX / MR * MR, (M + MR - 1) / MR * MR);
  static thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> a_buf, b_buf;
  float* ap = scratch(a_buf, static_cast<size_t>(mc_block * KC));
  float* b_scratch =
      packed_b ? nullptr
               : scratch(b_buf, static_cast<size_t>(KC * ((std::min(N, NC) + NR - 1) / NR * NR)));
  const float* next_packed = packed_b;  // this block's panels in packed_b
  const bool direct_a = csa == 1;
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    const int64_t panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      const bool acc = accumulate || pc > 0;
      const float* slice_bias = pc == 0 && bias ? bias + jc : nullptr;  // added once, first slice
      const bool last = pc + kc == K;  // the activation goes on the final sums
      const float* bp = packed_b ? next_packed : b_scratch;
      if (packed_b)
        next_packed += kc * panels * NR;
      else
        pack_b(B + pc * rsb + jc * csb, rsb, csb, kc, nc, b_scratch, 0, panels);
      for (int64_t ic = 0; ic < M; ic += mc_block) {
        const int64_t mc = std::min(mc_block, M - ic);
        // Aᵀ row-major is packed by the first panel's micro-kernels, as in gemm_short.
        const int64_t whole =
            direct_a ? 0 : pack_a_ahead(A + ic * rsa + pc * csa, rsa, csa, mc, kc, ap, rsa == 1);
        // Aᵀ row-major (a weight gradient's dYᵀ): the rows of the block packed next (the next MC
        // block, else the next K slice's first) are asked for while this one's micro-kernels
        // run, as gemm_short does for B. Each k of a block is a short run of one row of Aᵀ, and
        // the packing would wait on those loads.
        RowPrefetcher ahead;
        if (!direct_a && rsa == 1) {
          const bool next_slice = ic + mc >= M;
          const int64_t next_ic = next_slice ? 0 : ic + mc, next_pc = next_slice ? pc + kc : pc;
          const int64_t steps = panels * ((mc + MR - 1) / MR);
          if (next_pc < K)
            ahead = {A + next_ic + next_pc * csa, csa, std::min(KC, K - next_pc),
                     std::min(mc_block, M - next_ic), steps};
          else if (next.a && jc + nc >= N)  // the last block: the next chunk's first
            ahead = {next.a, csa, std::min(KC, K), std::min(mc_block, next.count), steps};
        }
        for (int64_t p = 0; p < panels; ++p) {
          const int64_t jr = p * NR;
          const int64_t cols = std::min(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR, ahead.step()) {
            const bool copy = p == 0 && ir < whole;
            const ALayout layout = direct_a ? ALayout::kRows
                                   : copy   ? ALayout::kColumns
                                            : ALayout::kPacked;
            micro_tile(kc,
                       direct_a ? A + (ic + ir) * rsa + pc
                       : copy   ? A + ic + ir + pc * csa
                                : ap + ir * kc,
                       layout, direct_a ? rsa : csa, bp + p * NR * kc,
                       C + (ic + ir) * ldc + jc + jr, ldc, std::min(MR, mc - ir), cols, acc,
                       slice_bias ? slice_bias + jr : nullptr, {}, copy ? ap + ir * kc : nullptr);
          }
        }
        if (act && last)  // the block's rows hold their final sums
          activate_block(*act, C + ic * ldc + jc, ldc, act->out + ic * act->ldo + jc, mc, nc);
      }
    }
  }
}

// Floats of B[K, N] packed whole, in the order gemm_rows reads a `packed_b`: for each NC block
// of columns and each KC slice, the slice's panels.
int64_t packed_b_floats(int64_t K, int64_t N) {
  static_assert(NC % NR == 0, "whole panels per block");
  return K * ((N + NR - 1) / NR) * NR;
}

// One KC slice of one NC block of columns of B packed whole: B[pc:pc+kc, jc:jc+nc], its `panels`
// panels at `offset` floats into the packing.
struct PackedSlice {
  int64_t jc, pc, kc, nc, panels, offset;
};

// fn(slice) for the slices of B[K, N] packed whole, in the order of the packing (see
// packed_b_floats).
template <typename F>
void for_each_packed_slice(int64_t K, int64_t N, F&& fn) {
  int64_t offset = 0;
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc), panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      fn(PackedSlice{jc, pc, kc, nc, panels, offset});
      offset += kc * panels * NR;
    }
  }
}

// B[K, N] packed whole into dst (packed_b_floats(K, N) floats, 64-byte aligned), each slice's
// panels split among the threads when `threaded`.
void pack_b_whole(int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb, float* dst,
                  bool threaded) {
  for_each_packed_slice(K, N, [&](const PackedSlice& s) {
    auto some = [&](int64_t p0, int64_t p1) {
      pack_b(B + s.pc * rsb + s.jc * csb, rsb, csb, s.kc, s.nc, dst + s.offset, p0, p1);
    };
    if (threaded)
      parallel_for(s.panels, 1, some);
    else
      some(0, s.panels);
  });
}

// B packed whole once per call and shared by the threads that claim its chunks of rows (see gemm):
// each thread claims panels of B until none are left, packs them, then reads the others' panels
// once they are done, so that no two threads pack the same weight. A panel another thread
// claimed but has not finished after kSharedWait (its vCPU taken by the host or another program)
// is not waited for: the thread then packs all of B for itself, so a stalled thread costs the
// others a few microseconds, not its stall. Packed values do not depend on which thread packs
// them: the same bits.
std::atomic<int> shared_packing_delay_us{0};  // detail::delay_shared_packing_for_testing
std::atomic<int64_t> own_packings{0};         // detail::own_packings_for_testing

class SharedPackedB {
 public:
  // Ready for call `call` of B[K, N]: no panel claimed. Only between calls (no thread in one).
  void start(uint64_t call, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb) {
    call_ = call;
    caller_ = std::this_thread::get_id();
    B_ = B, rsb_ = rsb, csb_ = csb;
    slices_.clear();
    panels_ = 0;
    for_each_packed_slice(K, N, [&](const PackedSlice& s) {
      slices_.push_back({s, panels_});
      panels_ += s.panels;
    });
    if (panels_ > capacity_) {
      done_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(panels_));
      capacity_ = panels_;
    }
    next_.store(0, std::memory_order_relaxed);
    data_ = scratch(buf_, static_cast<size_t>(packed_b_floats(K, N)));
  }
  // B packed for this call: the panels this thread claims packed by it, the others waited for;
  // null when one of them was not done in time (the caller then packs B itself).
  const float* join() {
    for (int64_t g; (g = next_.fetch_add(1, std::memory_order_relaxed)) < panels_;) {
      if (const int us = shared_packing_delay_us.load(std::memory_order_relaxed);
          us > 0 && g == 0 && std::this_thread::get_id() == caller_)
        stall_for_testing(us);
      pack_panel(g);
      done_[g].store(call_, std::memory_order_release);
    }
    const auto start = std::chrono::steady_clock::now();
    for (int64_t g = 0; g < panels_; ++g)
      for (int spins = 0; done_[g].load(std::memory_order_acquire) != call_; ++spins) {
        detail::spin_pause();
        if (spins % 64 == 63 && std::chrono::steady_clock::now() - start > kSharedWait) {
          own_packings.fetch_add(1, std::memory_order_relaxed);
          return nullptr;
        }
      }
    return data_;
  }

 private:
  static constexpr auto kSharedWait = std::chrono::microseconds(20);
  // Up to `us` microseconds, until another thread has given up waiting for this one.
  static void stall_for_testing(int us) {
    const int64_t before = own_packings.load(std::memory_order_relaxed);
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (own_packings.load(std::memory_order_relaxed) == before &&
           std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  struct Slice {
    PackedSlice at;
    int64_t first;  // the slice's first panel, counted over all slices
  };
  void pack_panel(int64_t g) const {
    const Slice* s = &slices_.back();
    while (s->first > g) --s;  // the slices are few (K·N is at most kClaimMaxPackedB floats)
    const PackedSlice& a = s->at;
    const int64_t p = g - s->first;
    pack_b(B_ + a.pc * rsb_ + a.jc * csb_, rsb_, csb_, a.kc, a.nc, data_ + a.offset, p, p + 1);
  }
  uint64_t call_ = 0;
  std::thread::id caller_;  // the thread that calls gemm
  int64_t rsb_ = 0, csb_ = 0;
  const float* B_ = nullptr;
  std::vector<Slice> slices_;
  int64_t panels_ = 0, capacity_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> done_;  // the call whose packing each panel holds
  alignas(64) std::atomic<int64_t> next_{0};       // the next panel to claim
  std::vector<float, xsimd::aligned_allocator<float, 64>> buf_;
  float* data_ = nullptr;
};

// Over 128 rows on several threads, a B of up to this many floats packed (4 MiB) is packed whole
// once per call (SharedPackedB), and the threads claim chunks of rows (see gemm); a bigger one
// goes by fixed shares, each packing one slice at a time.
constexpr int64_t kClaimMaxPackedB = int64_t{1} << 20;

}  // namespace

namespace detail {
void delay_shared_packing_for_testing(int microseconds) {
  shared_packing_delay_us.store(microseconds, std::memory_order_relaxed);
}
int64_t own_packings_for_testing() { return own_packings.load(std::memory_order_relaxed); }
}  // namespace detail

PackedB pack_b_blocks(int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb) {
  PackedB out;
  constexpr size_t kAlign = 64 / sizeof(float);
  // Not value-initialized: every float is written by the packing below.
  out.buffer_.reset(new float[static_cast<size_t>(packed_b_floats(K, N)) + kAlign]);
  const auto address = reinterpret_cast<uintptr_t>(out.buffer_.get());
  out.data_ = out.buffer_.get() + (kAlign - address / sizeof(float) % kAlign) % kAlign;
  pack_b_whole(K, N, B, rsb, csb, out.data_, true);
  return out;
}

namespace {

// C = 0 (or kept), plus the bias and the activation: a product over an empty K.
void gemm_empty_k(int64_t M, int64_t N, float* C, int64_t ldc, bool accumulate, const float* bias,
                  const GemmActivation* act) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    if (!accumulate) std::fill(c, c + N, 0.0f);
    if (bias)
      for (int64_t j = 0; j < N; ++j) c[j] += bias[j];
    if (act) activate_row(*act, c, act->out + i * act->ldo, N);
  }
}

// few_rows over columns split between threads once there is enough work to wake them.
void gemm_few_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, const float* B,
                   int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
                   const float* bias, const GemmActivation* act) {
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kParallelFlops / (2 * M * K)));
  parallel_for(
      N, grain,
      [&](int64_t j0, int64_t j1) {
        few_rows(M, j0, j1, K, A, rsa, B, rsb, csb, C, ldc, accumulate, bias, act);
      },
      W);
}

}  // namespace

void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate, const float* packed_b,
          const float* bias, const GemmActivation* act) {
  if (M == 0 || N == 0) return;
  if (K == 0) return gemm_empty_k(M, N, C, ldc, accumulate, bias, act);
  // Threads pay off only once there is enough work to hide waking them (a few microseconds).
  const double flops =
      2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  // A few rows: packing B, K·N values, would cost about what the product does (attention's
  // scores and weighted values for one new token while decoding).
  if (M < kGemmFewRows && csa == 1 && (rsb == 1 || csb == 1))
    return gemm_few_rows(M, N, K, A, rsa, B, rsb, csb, C, ldc, accumulate, bias, act);
  const int threads = flops < kParallelFlops || in_parallel() ? 1 : get_num_threads();
  if (threads == 1 && !packed_b && !act && tiny(M, N, K, rsa, csa, rsb, csb))
    return gemm_tiny(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, accumulate, bias);
  if (M <= MC_MAX && K <= kShortMaxK && !packed_b) {
    // Bᵀ row-major (a linear layer's weight) is read in place when A's rows fill the NR-token
    // panels to within an eighth: the panels compute their padding rows too.
    const int64_t m_pad = (M + NR - 1) / NR * NR;
    if (rsb == 1 && csb != 1 && 8 * (m_pad - M) < m_pad)
      return gemm_short_weights(M, N, K, A, rsa, csa, B, csb, C, ldc, accumulate, bias, act,
                                threads);
    return gemm_short(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, accumulate, bias, act, threads);
  }
  // Each thread runs the one-thread algorithm (gemm_rows) on chunks of C's MR-row panels,
  // packing B for itself: K·N copies against M·N·K / threads multiply-adds, and each thread then
  // reads only its own cache, where B packed once and read by all would take two fork/joins per
  // K slice and bring half of every B panel from the other core's cache. Which thread computes a
  // row does not change its sums, so the bits do not depend on the thread count.
  const int64_t row_panels = (M + MR - 1) / MR;
  auto run_rows = [&](int64_t p0, int64_t p1, const float* b_packed, const Rows& next) {
    if (p0 == p1) return;  // fewer panels than threads
    const int64_t i0 = p0 * MR, rows = std::min(M, p1 * MR) - i0;
    GemmActivation share_act;
    if (act) share_act = {act->kind, act->out + i0 * act->ldo, act->ldo};
    gemm_rows(rows, N, K, A + i0 * rsa, rsa, csa, B, rsb, csb, C + i0 * ldc, ldc, accumulate,
              b_packed, bias, act ? &share_act : nullptr, next);
  };
  // The threads claim chunks of rows as they finish the last (parallel_for: up to eight per
  // thread), not one fixed share each: the two vCPUs of a cloud machine are not always equally
  // fast, and with fixed shares the faster would wait for the slower. B is packed once per call,
  // by the threads together at their first chunk (SharedPackedB), and read by their other chunks.
  // A chunk's last block asks for the first rows of Aᵀ of the chunk its thread likely claims next
  // (ChunkOrder), as gemm_rows does between its own blocks.
  if (threads > 1 && (packed_b || packed_b_floats(K, N) <= kClaimMaxPackedB)) {
    const uint64_t call = new_call();
    static thread_local SharedPackedB callers_b;  // this caller's; its threads reach it by `shared`
    SharedPackedB& shared = callers_b;
    if (!packed_b) shared.start(call, K, N, B, rsb, csb);
    const ChunkOrder order(row_panels, 1);
    parallel_for(row_panels, 1, [&](int64_t p0, int64_t p1) {
      const auto [n0, n1] = order.next(p0);  // A's rows packed after this chunk
      const Rows next = n0 < n1 ? Rows{A + n0 * MR * rsa, std::min(M, n1 * MR) - n0 * MR} : Rows{};
      if (packed_b) return run_rows(p0, p1, packed_b, next);
      // This thread's B for the call: the shared one, or its own when that was not ready.
      static thread_local PackedPerCall packed_whole;
      static thread_local std::pair<uint64_t, const float*> joined{0, nullptr};  // call, its B
      if (joined.first != call) {
        const float* bp = shared.join();
        if (!bp)
          bp = packed_whole.get(call, packed_b_floats(K, N),
                                [&](float* dst) { pack_b_whole(K, N, B, rsb, csb, dst, false); });
        joined = {call, bp};
      }
      run_rows(p0, p1, joined.second, next);
    });
    return;
  }
  thread_shares(row_panels, threads,
                [&](int64_t p0, int64_t p1) { run_rows(p0, p1, packed_b, {}); });
}

}  // namespace anatomy
