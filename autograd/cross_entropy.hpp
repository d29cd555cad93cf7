// What cross_entropy (functional.cpp) hands its fast kernels (kernels/functional.cpp): the
// arguments checked, and the logits laid out as rows.
#pragma once

#include <vector>

#include "autograd/ops.hpp"

namespace anatomy {

// The logits as rows [N, C] and the targets as [N]: [C] -> [1, C]; [N, C, d...] -> [N·d..., C],
// rows in the target's row-major order.
struct CrossEntropyRows {
  Tensor x;                      // [N, C], contiguous, detached
  std::vector<int64_t> targets;  // [N]
  int64_t N = 0, C = 0;
  int64_t count = 0;  // targets that are not ignore_index: what "mean" divides by
};

// The two kernels, one per direction:
//   cross_entropy:           losses[n] and, when options.nll is set, nlls[n] for every row
//                            whose target is not ignored (the others stay 0)
//   cross_entropy_backward:  grad_rows[n] = (softmax(x_n) - (1-ε) onehot(t_n) - ε/C) · scales[n]
//                            ([N, C], rows with scale 0 all 0), ε the label smoothing
using CrossEntropyForward = void(const CrossEntropyRows& rows, const CrossEntropyOptions& options,
                                 std::vector<float>& losses, std::vector<float>& nlls);
using CrossEntropyBackward = void(const CrossEntropyRows& rows, const std::vector<float>& scales,
                                  float label_smoothing, const Tensor& grad_rows);

}  // namespace anatomy
