// The machine's float32 peak: every thread running independent fused multiply-adds on the widest
// vectors this build targets (xsimd::batch<float>, as the kernels use). A large product comes
// close to it, a whole workload less so; the benchmarks print each one's GFLOP/s as a share of it,
// to show how far a workload is from the hardware as well as from PyTorch.
#pragma once

#include "kernels/xsimd.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace anatomy::bench {

// Independent accumulators per thread: an FMA's latency (4 cycles) times the FMA units (2) is 8
// chains in flight; 16 leave room for a core that issues more.
inline constexpr int kChains = 16;

// `iterations` rounds of kChains FMAs on one thread; returns a sum of the accumulators so that
// the compiler must compute them.
inline float fma_chains(int64_t iterations) {
  using batch = xsimd::batch<float>;
  batch acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = batch(1.0f + 0.001f * static_cast<float>(c));
  // acc * a + b with a just below 1 stays finite and away from denormals however long it runs.
  // The two come through volatiles: with constants the compiler computes the loop's result
  // itself and no FMA runs.
  static volatile float a_value = 0.9999999f, b_value = 1e-7f;
  const batch a(a_value), b(b_value);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = xsimd::fma(acc[c], a, b);
  batch sum(0.0f);
  for (int c = 0; c < kChains; ++c) sum += acc[c];
  return xsimd::hadd(sum);
}

// The peak GFLOP/s of `threads` threads, the best of `repeats` timings of each thread running
// `iterations` rounds (2 flops per lane of each FMA).
inline double fma_peak_gflops(int threads, int64_t iterations = 100'000'000, int repeats = 3) {
  using batch = xsimd::batch<float>;
  static volatile float sink = 0.0f;
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<float> results(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(
          [&results, t, iterations] { results[static_cast<size_t>(t)] = fma_chains(iterations); });
    for (auto& th : pool) th.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : results) sink = sink + v;
    const double flops = 2.0 * static_cast<double>(threads) * static_cast<double>(iterations) *
                         kChains * static_cast<double>(batch::size);
    best = std::max(best, flops / seconds / 1e9);
  }
  return best;
}

}  // namespace anatomy::bench
