// The machine's float32 FMA peak (fma_peak.hpp) at 1 thread and at every hardware thread.
//   peak_benchmark           a Markdown table
//   peak_benchmark --plain   "THREADS GFLOPS" lines, for the scripts that divide by it
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "benchmarks/fma_peak.hpp"

int main(int argc, char** argv) {
  const bool plain = argc > 1 && std::strcmp(argv[1], "--plain") == 0;
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int lanes = static_cast<int>(xsimd::batch<float>::size);
  if (!plain)
    fmt::print(
        "| FMA peak (float32, {} lanes of {}) | threads | GFLOP/s |\n"
        "|---|---|---|\n",
        lanes, xsimd::batch<float>::arch_type::name());
  for (int threads : {1, all}) {
    const double gflops = anatomy::bench::fma_peak_gflops(threads);
    if (plain)
      fmt::print("{} {:.1f}\n", threads, gflops);
    else
      fmt::print("| independent FMAs on every thread | {} | {:.1f} |\n", threads, gflops);
    if (all == 1) break;
  }
}
