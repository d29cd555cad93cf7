#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "autograd/gemm.hpp"

int main(int argc, char** argv) {
  // A fixed thread count keeps results bit-for-bit reproducible from run to run.
  anatomy::set_num_threads(2);
  doctest::Context context(argc, argv);
  return context.run();
}
