// How a reduction sees its input: the reduced dims gathered into the middle of a contiguous
// [O, R, I] block. The ops in reduction.cpp plan every reduction this way (reduction_plan), and
// hand a fast kernel (kernels/reduction.cpp) the same plan, so the two fold the same numbers.
#pragma once

#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy {

struct ReductionPlan {
  std::vector<int64_t> dims;  // the reduced dims, sorted, wrapped
  Shape keep_shape;           // the input's shape with reduced dims as 1
  Shape out_shape;            // the result's shape as asked (keepdim or not)
  Tensor x;                   // the input's values, contiguous, laid out as [O, R, I]
  int64_t O = 1, R = 1, I = 1;
};

// What a fast reduction kernel is given:
//   sum, amax, amin:  Tensor(const ReductionPlan&): out[o, i] = fold over r of x[o, r, i], in
//                     p.out_shape (a NaN propagates through amax and amin)
//   argmax, argmin:   void(const Tensor& rows, const Tensor& index): for each row of the
//                     contiguous [O, R] rows, the int64 index of its first extremum (a NaN
//                     counts as one)
using ReductionKernel = Tensor(const ReductionPlan&);
using ArgSearchKernel = void(const Tensor& rows, const Tensor& index);

}  // namespace anatomy
