// The matrix multiply behind matmul, bmm and linear.
//
// C[M, N] (+)= A[M, K] · B[K, N], where A and B are read through (row stride, column stride)
// pairs, so a transposed operand (a view) is multiplied without a copy. C is row-major with
// leading dimension ldc.
#pragma once

#include <cstdint>

namespace anatomy {

void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate);

// Below this many flops a GEMM runs on one thread (the fork/join would cost more than it saves).
inline constexpr double kParallelFlops = 3.0e7;

// Threads used by gemm and the other parallel kernels (OpenMP; defaults to all cores).
int get_num_threads();
void set_num_threads(int n);

}  // namespace anatomy
