// The matrix multiply behind matmul, bmm and linear.
//
// C[M, N] (+)= A[M, K] · B[K, N], where A and B are read through (row stride, column stride)
// pairs, so a transposed operand (a view) is multiplied without a copy. C is row-major with
// leading dimension ldc.
#pragma once

#include <cstdint>

#include "autograd/parallel.hpp"

namespace anatomy {

void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate);

// Below this many flops a GEMM runs on one thread (waking the others would cost more than it
// saves).
inline constexpr double kParallelFlops = 2.0e6;

}  // namespace anatomy
