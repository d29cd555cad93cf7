// GFLOP/s of our GEMM and OpenBLAS's sgemm, side by side in one run, with 1 and 2 threads, on
// square sizes and on the products the models make; then a table of the ratios (ours /
// OpenBLAS). Machines are noisy, so only ratios measured in the same run are meaningful.
//
// A model shape M x K x N is a linear layer of K inputs and N outputs on M tokens, in its three
// products: forward Y = X·Wᵀ ("NT": the weight [N, K] read transposed), the input gradient
// dX = dY·W ("NN", M x N x K) and the weight gradient dW = dYᵀ·X ("TN", N x M x K).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <map>
#include <vector>

#include "autograd/gemm.hpp"
#include "autograd/random.hpp"

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

void set_flops(benchmark::State& state, const Case& c) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(c.M * c.N * c.K) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void run(benchmark::State& state, const Case& c, int threads, bool ours) {
  auto a = random_matrix(c.M * c.K, 1), b = random_matrix(c.K * c.N, 2);
  std::vector<float> out(static_cast<size_t>(c.M * c.N));
  // Row-major storage: A is [M, K] or, transposed, [K, M]; B is [K, N] or [N, K].
  const int64_t rsa = c.trans_a ? 1 : c.K, csa = c.trans_a ? c.M : 1;
  const int64_t rsb = c.trans_b ? 1 : c.N, csb = c.trans_b ? c.K : 1;
  if (ours)
    anatomy::set_num_threads(threads);
  else
    openblas_set_num_threads(threads);
  const int M = static_cast<int>(c.M), N = static_cast<int>(c.N), K = static_cast<int>(c.K);
  for (auto _ : state) {
    if (ours)
      anatomy::gemm(c.M, c.N, c.K, a.data(), rsa, csa, b.data(), rsb, csb, out.data(), c.N, false);
    else
      cblas_sgemm(CblasRowMajor, c.trans_a ? CblasTrans : CblasNoTrans,
                  c.trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, a.data(), c.trans_a ? M : K,
                  b.data(), c.trans_b ? K : N, 0.0f, out.data(), N);
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, c);
}

// Interleaves ours and OpenBLAS per case so both see the same machine state.
void register_all() {
  for (const auto& c : cases())
    for (int t : {1, 2})
      for (bool ours : {true, false})
        benchmark::RegisterBenchmark(
            fmt::format("{}/{}/{}", ours ? "anatomy" : "openblas", c.name, t).c_str(),
            [c, t, ours](benchmark::State& s) { run(s, c, t, ours); })
            ->MinTime(0.3)
            ->UseRealTime();
}

// Prints as usual and keeps each run's GFLOP/s for the summary.
class Collect : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> gflops;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      std::string name = r.benchmark_name();
      gflops[name.substr(0, name.find("/min_time"))] = r.counters.at("GFLOP/s");
    }
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
      "\n| product (M x K x N) | threads | anatomy GFLOP/s | OpenBLAS GFLOP/s | ratio |\n"
      "|---|---|---|---|---|\n");
  for (const auto& c : cases())
    for (int t : {1, 2}) {
      const double ours = reporter.gflops[fmt::format("anatomy/{}/{}", c.name, t)];
      const double blas = reporter.gflops[fmt::format("openblas/{}/{}", c.name, t)];
      if (ours == 0 && blas == 0) continue;  // filtered out by --benchmark_filter
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.0f}% |\n", c.name, t, ours, blas,
                 blas > 0 ? 100.0 * ours / blas : 0.0);
    }
  benchmark::Shutdown();
}
