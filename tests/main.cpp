#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

#include "kernels/gemm.hpp"

int main(int argc, char** argv) {
  // ctest runs two test processes at once; each uses one thread unless OMP_NUM_THREADS says
  // otherwise (two processes spinning two threads each on two cores crawl).
  if (!std::getenv("OMP_NUM_THREADS")) anatomy::set_num_threads(1);
  doctest::Context context(argc, argv);
  return context.run();
}
