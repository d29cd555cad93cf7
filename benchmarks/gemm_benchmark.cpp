// GFLOP/s of our GEMM and OpenBLAS's sgemm, side by side in one run, with 1 and 2 threads, on
// square sizes and on the products the models make; then a table of the ratios (ours /
// OpenBLAS). Machines are noisy, so the two libraries take turns within each case (see run).
//
// A model shape M x K x N is a linear layer of K inputs and N outputs on M tokens, in its three
// products: forward Y = X·Wᵀ ("NT": the weight [N, K] read transposed), the input gradient
// dX = dY·W ("NN", M x N x K) and the weight gradient dW = dYᵀ·X ("TN", N x M x K).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "autograd/random.hpp"
#include "benchmarks/fma_peak.hpp"
#include "kernels/gemm.hpp"

namespace {

struct Case {
  std::string name;
  int64_t M, K, N;
  bool trans_a, trans_b;  // A stored [K, M], B stored [N, K]
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : {256, 512, 1024})
    out.push_back({fmt::format("square {}", n), n, n, n, false, false});
  const int64_t shapes[][3] = {{768, 128, 128},  {768, 128, 512},  {768, 512, 128},
                               {768, 128, 1000}, {128, 768, 2304}, {128, 768, 3072},
                               {128, 3072, 768}, {768, 128, 384},  {768, 128, 69}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], K = s[1], N = s[2];
    out.push_back({fmt::format("{}x{}x{} NT", M, K, N), M, K, N, false, true});
    out.push_back({fmt::format("{}x{}x{} NN", M, N, K), M, N, K, false, false});
    out.push_back({fmt::format("{}x{}x{} TN", N, M, K), N, M, K, true, false});
  }
  return out;
}

std::vector<float> random_matrix(int64_t n, uint64_t seed) {
  anatomy::Generator g(seed);
  std::vector<float> m(static_cast<size_t>(n));
  for (auto& v : m) v = g.normal();
  return m;
}

// One call of ours or OpenBLAS's on the case's matrices (row-major: A is [M, K] or, transposed,
// [K, M]; B is [K, N] or [N, K]).
void call(const Case& c, bool ours, const float* a, const float* b, float* out) {
  const int64_t rsa = c.trans_a ? 1 : c.K, csa = c.trans_a ? c.M : 1;
  const int64_t rsb = c.trans_b ? 1 : c.N, csb = c.trans_b ? c.K : 1;
  const int M = static_cast<int>(c.M), N = static_cast<int>(c.N), K = static_cast<int>(c.K);
  if (ours)
    anatomy::gemm(c.M, c.N, c.K, a, rsa, csa, b, rsb, csb, out, c.N, false);
  else
    cblas_sgemm(CblasRowMajor, c.trans_a ? CblasTrans : CblasNoTrans,
                c.trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, a, c.trans_a ? M : K, b,
                c.trans_b ? K : N, 0.0f, out, N);
  benchmark::DoNotOptimize(out);
}

// Ours and OpenBLAS's in turns of about 10 ms each (ABBA: each library goes first as often), 40
// turns in all, every call timed; each library's GFLOP/s is its median call. Were one library run
// for 0.3 s and then the other, a noisy minute on a 2-core virtual machine would move one side
// alone.
// After each turn the threads of the library that ran are given 5 ms to go to sleep (ours spin
// 50 us, OpenBLAS's 2^22 cycles: see main), so that they do not take the next turn's cores.
void run(benchmark::State& state, const Case& c, int threads) {
  const auto a = random_matrix(c.M * c.K, 1), b = random_matrix(c.K * c.N, 2);
  std::vector<float> out(static_cast<size_t>(c.M * c.N));
  anatomy::set_num_threads(threads);
  openblas_set_num_threads(threads);
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds[2];  // [0] ours, [1] OpenBLAS
  for (auto _ : state) {
    for (int turn = 0; turn < 40; ++turn) {
      const bool ours = (turn / 2 + turn) % 2 == 0;
      auto& times = seconds[ours ? 0 : 1];
      const auto end = Clock::now() + std::chrono::milliseconds(10);
      do {
        const auto t0 = Clock::now();
        call(c, ours, a.data(), b.data(), out.data());
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      } while (Clock::now() < end);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // idle threads go to sleep
    }
  }
  const double flop = 2.0 * static_cast<double>(c.M * c.N * c.K);
  for (int i = 0; i < 2; ++i) {
    auto& t = seconds[i];
    std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
    state.counters[i == 0 ? "anatomy" : "openblas"] = 1e-9 * flop / t[t.size() / 2];
  }
}

void register_all() {
  for (const auto& c : cases())
    for (int t : {1, 2})
      benchmark::RegisterBenchmark(fmt::format("{}/{}", c.name, t).c_str(),
                                   [c, t](benchmark::State& s) { run(s, c, t); })
          ->Iterations(1)
          ->UseRealTime();
}

// Prints as usual and keeps each case's GFLOP/s for the summary.
class Collect : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::pair<double, double>> gflops;  // ours, OpenBLAS's
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      std::string name = r.benchmark_name();
      gflops[name.substr(0, name.find("/iterations"))] = {r.counters.at("anatomy"),
                                                          r.counters.at("openblas")};
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// The core type to ask OpenBLAS for when the kernels it runs (its choice or OPENBLAS_CORETYPE's)
// are older than this CPU: SkylakeX on a CPU with AVX-512 for any kernels without it, Haswell for
// Prescott (its fallback for a CPU it does not know) on one with AVX2; nullptr to keep them. Only
// x86 has those core types (and GCC's __builtin_cpu_supports): elsewhere OpenBLAS's choice stays.
const char* better_openblas_core() {
#if !defined(__x86_64__) && !defined(__i386__)
  return nullptr;
#else
  const std::string chosen = openblas_get_corename();
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    const bool avx512 =
        chosen == "SkylakeX" || chosen == "Cooperlake" || chosen == "SapphireRapids";
    return avx512 ? nullptr : "SkylakeX";
  }
  if (chosen == "Prescott" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
  return nullptr;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's idle threads call sched_yield in a loop (by default for 2^28 cycles) before they
  // sleep, and the scheduler ran them instead of our worker: our two-thread products ran at
  // one-thread speed (512 x 768 x 128 TN: 60 GFLOP/s instead of 117), even with OpenBLAS's last
  // call a second before. With 2^22 cycles (1-2 ms) its threads still spin between the calls of
  // a turn, and sleep in the 5 ms after it. OpenBLAS reads the variable when it is loaded, hence
  // the new start.
  // Kernels older than the CPU are no yardstick. OpenBLAS 0.3.21 falls back to Prescott's SSE3
  // kernels on a CPU newer than it knows (an Intel Xeon of model 207 with AVX-512: 15-33 GFLOP/s
  // against 90-220 with its SkylakeX kernels), and an AMD EPYC of family 26 (Zen 5, AVX-512) came
  // with OPENBLAS_CORETYPE=Haswell set (AVX2: 100-112 against 180-206). OpenBLAS reads that
  // variable when loaded, too. As benchmarks/openblas_core.py does for the PyTorch references.
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "22", 1);
    if (const char* core = better_openblas_core()) {
      fmt::print(stderr,
                 "gemm_benchmark: OpenBLAS would run {}'s kernels, older than this CPU; "
                 "OPENBLAS_CORETYPE={}\n",
                 openblas_get_corename(), core);
      setenv("OPENBLAS_CORETYPE", core, 1);
    }
    execv("/proc/self/exe", argv);
    fmt::print(stderr, "gemm_benchmark: could not restart with OPENBLAS_THREAD_TIMEOUT set\n");
  }
  fmt::print("OpenBLAS kernels: {}\n", openblas_get_corename());
  benchmark::Initialize(&argc, argv);
  register_all();
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // The machine's FMA peak at each thread count, measured after the products so that it sees
  // the same clock.
  const double peak[3] = {0.0, anatomy::bench::fma_peak_gflops(1),
                          anatomy::bench::fma_peak_gflops(2)};
  fmt::print(
      "\n| product (M x K x N) | threads | anatomy GFLOP/s | OpenBLAS GFLOP/s | ratio | anatomy's "
      "share of the FMA peak |\n"
      "|---|---|---|---|---|---|\n");
  for (const auto& c : cases())
    for (int t : {1, 2}) {
      const auto it = reporter.gflops.find(fmt::format("{}/{}", c.name, t));
      if (it == reporter.gflops.end()) continue;  // filtered out by --benchmark_filter
      const auto [ours, blas] = it->second;
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.0f}% | {:.0f}% |\n", c.name, t, ours, blas,
                 blas > 0 ? 100.0 * ours / blas : 0.0, 100.0 * ours / peak[t]);
    }
  benchmark::Shutdown();
}
