// The machine's float32 FMA peak (fma_peak.hpp) at 1 and 2 threads, the thread counts the
// benchmarks run ours at.
//   peak_benchmark           a Markdown table
//   peak_benchmark --plain   "THREADS GFLOPS" lines, for the scripts that divide by it
#include <fmt/format.h>

#include <cstring>

#include "benchmarks/fma_peak.hpp"

int main(int argc, char** argv) {
  const bool plain = argc > 1 && std::strcmp(argv[1], "--plain") == 0;
  const int lanes = static_cast<int>(xsimd::batch<float>::size);
  if (!plain)
    fmt::print(
        "| FMA peak (float32, {} lanes of {}) | threads | GFLOP/s |\n"
        "|---|---|---|\n",
        lanes, xsimd::batch<float>::arch_type::name());
  for (int threads : {1, 2}) {
    const double gflops = anatomy::bench::fma_peak_gflops(threads);
    if (plain)
      fmt::print("{} {:.1f}\n", threads, gflops);
    else
      fmt::print("| independent FMAs on each thread | {} | {:.1f} |\n", threads, gflops);
  }
}
