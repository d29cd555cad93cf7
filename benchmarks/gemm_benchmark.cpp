// GFLOP/s of our GEMM and OpenBLAS's sgemm, side by side in one run, at n = 256, 512, 1024
// with 1 and 2 threads; then a table of the ratios (ours / OpenBLAS). Machines are noisy, so
// only ratios measured in the same run are meaningful.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <map>
#include <vector>

#include "autograd/gemm.hpp"
#include "autograd/random.hpp"

namespace {

std::vector<float> random_matrix(int64_t n) {
  anatomy::Generator g(n);
  std::vector<float> m(n * n);
  for (auto& v : m) v = g.normal();
  return m;
}

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_anatomy(benchmark::State& state) {
  const int64_t n = state.range(0);
  anatomy::set_num_threads(static_cast<int>(state.range(1)));
  auto a = random_matrix(n), b = random_matrix(n + 1);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    anatomy::gemm(n, n, n, a.data(), n, 1, b.data(), n, 1, c.data(), n, false);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void BM_openblas(benchmark::State& state) {
  const int64_t n = state.range(0);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  auto a = random_matrix(n), b = random_matrix(n + 1);
  std::vector<float> c(n * n);
  const int ni = static_cast<int>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(), ni, b.data(),
                ni, 0.0f, c.data(), ni);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

// Interleaves ours and OpenBLAS per size so both see the same machine state.
void register_all() {
  for (int64_t n : {256, 512, 1024})
    for (int64_t t : {1, 2}) {
      benchmark::RegisterBenchmark("anatomy", BM_anatomy)
          ->Args({n, t})
          ->MinTime(1.0)
          ->UseRealTime();
      benchmark::RegisterBenchmark("openblas", BM_openblas)
          ->Args({n, t})
          ->MinTime(1.0)
          ->UseRealTime();
    }
}

// Prints as usual and keeps each run's GFLOP/s for the summary.
class Collect : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> gflops;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) gflops[r.benchmark_name()] = r.counters.at("GFLOP/s");
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_all();
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  fmt::print(
      "\n| n | threads | anatomy GFLOP/s | OpenBLAS GFLOP/s | ratio |\n|---|---|---|---|---|\n");
  for (int n : {256, 512, 1024})
    for (int t : {1, 2}) {
      const std::string suffix = fmt::format("/{}/{}/min_time:1.000/real_time", n, t);
      const double ours = reporter.gflops["anatomy" + suffix];
      const double blas = reporter.gflops["openblas" + suffix];
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.0f}% |\n", n, t, ours, blas,
                 blas > 0 ? 100.0 * ours / blas : 0.0);
    }
  benchmark::Shutdown();
}
