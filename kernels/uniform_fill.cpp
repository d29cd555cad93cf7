#include "kernels/uniform_fill.hpp"

#include <cstdint>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace anatomy {

// GCC 12 reports the undefined starting value that the AVX-512 intrinsics use internally for
// lanes they never keep (_mm512_undefined_epi32) as "may be used uninitialized", a false
// positive (GCC bug 105593); with warnings as errors (CI) it would stop the build.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

// Lane l holds the state of call i + l. A step of the lanes is L steps of the stream, the LCG
// composed L times: s -> A s + C. The lanes' chains are independent, so the multiplies overlap
// (and vectorize) where one stream waits for each before the next.
#if defined(__AVX512F__) && defined(__AVX512DQ__)
constexpr int L = 32;
#else
constexpr int L = 8;
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// out[0..) in steps of L draws while a whole step fits in n; returns how many it wrote, with
// lane[] stepped past them. Eight lanes to a register, four registers: AVX-512 multiplies 64-bit
// lanes in one instruction, and four independent chains hide its latency; the output's rotate is
// one instruction too.
[[gnu::always_inline]] inline int64_t fill_lanes(uint64_t (&lane)[L], uint64_t A, uint64_t C,
                                                 float* out, int64_t n) {
  const __m512i a = _mm512_set1_epi64(static_cast<int64_t>(A));
  const __m512i c = _mm512_set1_epi64(static_cast<int64_t>(C));
  __m512i s[4];
  for (int k = 0; k < 4; ++k) s[k] = _mm512_loadu_si512(lane + 8 * k);
  // output() of each lane: the low 32 bits of every 64-bit lane rotated by its count (the high
  // 32 bits rotate by 0 and are dropped).
  auto out32 = [](__m512i old) {
    const __m512i x = _mm512_srli_epi64(_mm512_xor_si512(_mm512_srli_epi64(old, 18), old), 27);
    return _mm512_cvtepi64_epi32(_mm512_rorv_epi32(x, _mm512_srli_epi64(old, 59)));
  };
  const __m512 scale = _mm512_set1_ps(0x1.0p-24f);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int h = 0; h < 2; ++h) {
      const __m512i u =
          _mm512_inserti64x4(_mm512_castsi256_si512(out32(s[2 * h])), out32(s[2 * h + 1]), 1);
      _mm512_storeu_ps(out + i + 16 * h,
                       _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(u, 8)), scale));
    }
    for (auto& sk : s) sk = _mm512_add_epi64(_mm512_mullo_epi64(sk, a), c);
  }
  for (int k = 0; k < 4; ++k) _mm512_storeu_si512(lane + 8 * k, s[k]);
  return i;
}
#elif defined(__AVX2__)
// The same with four lanes to a register. AVX2 multiplies only 32 x 32 -> 64 bits, so s A mod
// 2^64 is lo(s) lo(A) + (hi(s) lo(A) + lo(s) hi(A)) 2^32: three multiplies for four lanes, where
// the scalar loop takes one for each.
[[gnu::always_inline]] inline int64_t fill_lanes(uint64_t (&lane)[L], uint64_t A, uint64_t C,
                                                 float* out, int64_t n) {
  const __m256i a_lo = _mm256_set1_epi64x(static_cast<int64_t>(A & 0xffffffffu));
  const __m256i a_hi = _mm256_set1_epi64x(static_cast<int64_t>(A >> 32u));
  const __m256i c = _mm256_set1_epi64x(static_cast<int64_t>(C));
  const __m256i low32 = _mm256_set1_epi64x(0xffffffff);
  auto step = [&](__m256i s) {
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(s, 32), a_lo),
                                           _mm256_mul_epu32(s, a_hi));
    return _mm256_add_epi64(
        _mm256_add_epi64(_mm256_mul_epu32(s, a_lo), _mm256_slli_epi64(cross, 32)), c);
  };
  auto out32 = [&](__m256i old) {  // output() of each lane, in its low 32 bits (high 32: 0)
    const __m256i x = _mm256_and_si256(
        _mm256_srli_epi64(_mm256_xor_si256(_mm256_srli_epi64(old, 18), old), 27), low32);
    const __m256i rot = _mm256_srli_epi64(old, 59);
    const __m256i left =
        _mm256_and_si256(_mm256_sub_epi32(_mm256_set1_epi32(32), rot), _mm256_set1_epi32(31));
    return _mm256_or_si256(_mm256_srlv_epi32(x, rot), _mm256_sllv_epi32(x, left));
  };
  __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lane));
  __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lane + 4));
  const __m256 scale = _mm256_set1_ps(0x1.0p-24f);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    // The low halves of lanes 0-3 and 4-7, interleaved by 128-bit half, then put in order.
    const __m256i mixed = _mm256_castps_si256(_mm256_shuffle_ps(
        _mm256_castsi256_ps(out32(s0)), _mm256_castsi256_ps(out32(s1)), _MM_SHUFFLE(2, 0, 2, 0)));
    const __m256i u = _mm256_permute4x64_epi64(mixed, _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(u, 8)), scale));
    s0 = step(s0);
    s1 = step(s1);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lane), s0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lane + 4), s1);
  return i;
}
#else
// The same one lane at a time.
inline int64_t fill_lanes(uint64_t (&lane)[L], uint64_t A, uint64_t C, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      out[i + l] = Generator::to_uniform(Generator::output(lane[l]));
      lane[l] = lane[l] * A + C;
    }
  return i;
}
#endif

}  // namespace

void uniform_fill(Generator& g, float* out, int64_t n) {
  const Generator::State start = g.get_state();
  const uint64_t kMultiplier = Generator::kMultiplier, inc_ = start.inc;
  int64_t i = 0;
  if (n >= 2 * L) {
    uint64_t lane[L], A = 1, C = 0;
    lane[0] = start.state;
    for (int l = 1; l < L; ++l) lane[l] = lane[l - 1] * kMultiplier + inc_;
    for (int l = 0; l < L; ++l) {
      C = C * kMultiplier + inc_;
      A *= kMultiplier;
    }
    i = fill_lanes(lane, A, C, out, n);
    g.set_state({lane[0], start.inc, start.has_spare, start.spare});  // the state of call i
  }
  for (; i < n; ++i) out[i] = g.uniform();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace anatomy
