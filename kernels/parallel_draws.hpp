// Random draws split between threads, with the numbers a one-thread loop would give.
#pragma once

#include <cstdint>

#include "autograd/random.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"
#include "kernels/uniform_fill.hpp"

namespace anatomy {

// fn(gen, begin, end) over [0, n) in chunks split between threads, where `gen` is the default
// generator jumped ahead to element `begin`, each element taking `draws` calls of next_u32.
// Afterwards the default generator stands where a one-thread loop over all n would leave it, and
// every element gets the numbers it would get from that loop, whatever the thread count.
template <typename F>
void parallel_draws(int64_t n, int64_t draws, F&& fn) {
  Generator& g = default_generator();
  const Generator start = g;
  parallel_for(n, simd::kGrain, [&](int64_t begin, int64_t end) {
    Generator local = start;
    local.advance(static_cast<uint64_t>(begin * draws));
    fn(local, begin, end);
  });
  g.advance(static_cast<uint64_t>(n * draws));
}

}  // namespace anatomy
