// The threads of nn::DataParallel (nn/data_parallel.cpp): the fast kernels "data_parallel.parts"
// (one part of the batch a thread), "data_parallel.run" (the parts at once, one a thread) and
// "data_parallel.reduce_gradients" (every replica's gradients added into the module's in one
// parallel loop), which must give what nn/data_parallel.cpp's parts_of, run_parts and
// add_gradients give.
#include <algorithm>
#include <functional>
#include <vector>

#include "autograd/dispatch.hpp"
#include "autograd/tensor.hpp"
#include "kernels/for_each_segment.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace anatomy {

namespace {

int64_t fast_parts(int64_t rows) {
  if (in_parallel()) return 1;
  return std::clamp<int64_t>(rows, 1, get_num_threads());
}

// Each part runs its whole forward or backward on a thread of its own: parts wait for each other
// once a phase, not at the end of every op.
void fast_run_parts(int64_t n, const std::function<void(int64_t k)>& part) {
  parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) part(k);
  });
}

// All the parameters in one parallel loop: a loop per parameter would run the small ones on one
// core and wake the other for each large one. A strided gradient is added where it lies, in the
// same order.
void fast_add_gradients(const std::vector<Tensor>& into,
                        const std::vector<std::vector<Tensor>>& from) {
  std::vector<size_t> flat;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < into.size(); ++i) {
    bool contiguous = into[i].is_contiguous();
    for (const Tensor& g : from[i]) contiguous = contiguous && g.is_contiguous();
    if (contiguous) {
      flat.push_back(i);
      sizes.push_back(into[i].numel());
    } else {
      for (const Tensor& g : from[i]) Tensor(into[i]).add_(g);
    }
  }
  for_each_segment(sizes, [&](size_t k, int64_t b, int64_t e) {
    float* sum = into[flat[k]].data();
    for (const Tensor& g : from[flat[k]])
      simd::map2_range(sum + b, 1, g.data() + b, 1, sum + b, e - b,
                       [](simd::batch a, simd::batch c) { return a + c; });
  });
}

}  // namespace

void register_data_parallel_kernels() {
  register_kernel("data_parallel.parts", fast_parts);
  register_kernel("data_parallel.run", fast_run_parts);
  register_kernel("data_parallel.reduce_gradients", fast_add_gradients);
}

}  // namespace anatomy
