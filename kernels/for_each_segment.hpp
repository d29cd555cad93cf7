// for_each_segment: one parallel loop over many buffers (a model's parameters or gradients), as
// torch's foreach / multi-tensor kernels. Used by the kernels of nn/'s optimizer, gradient
// clipping and data-parallel reduction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

// fn(i, begin, end) over element ranges of buffers 0..sizes.size()-1, as one parallel loop over
// their concatenation. A model has dozens of small parameters; a loop per parameter would run
// each of them on one core (they are under the elementwise grain) and pass over memory once per
// formula, where this is one pass on both cores. The ranges depend only on the sizes and the
// thread count.
template <typename F>
void for_each_segment(const std::vector<int64_t>& sizes, F&& fn) {
  std::vector<int64_t> start(sizes.size() + 1, 0);
  for (size_t i = 0; i < sizes.size(); ++i) start[i + 1] = start[i] + sizes[i];
  parallel_for(
      start.back(), simd::kGrain,
      [&](int64_t b, int64_t e) {
        auto i =
            static_cast<size_t>(std::upper_bound(start.begin(), start.end(), b) - start.begin()) -
            1;
        for (; i < sizes.size() && start[i] < e; ++i) {
          const int64_t lo = std::max(b, start[i]), hi = std::min(e, start[i + 1]);
          if (lo < hi) fn(i, lo - start[i], hi - start[i]);
        }
      },
      simd::W);
}

}  // namespace anatomy
