// The matrix multiply behind matmul, bmm and linear.
//
// C[M, N] (+)= A[M, K] · B[K, N], where A and B are read through (row stride, column stride)
// pairs, so a transposed operand (a view) is multiplied without a copy. C is row-major with
// leading dimension ldc.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/parallel.hpp"

namespace anatomy {

// An activation applied to C's final values inside the GEMM (linear_gelu, as PyTorch's
// _addmm_activation): C keeps the pre-activation, which the backward needs, and `out` receives
// act(C) block by block, while each block of C is still in cache, instead of a second pass that
// reads all of C back. With `out` = C (and ldo = ldc), C receives act(C) alone: inference, which
// needs no pre-activation, then writes one result instead of two.
struct GemmActivation {
  enum class Kind { GeluErf, GeluTanh };
  Kind kind = Kind::GeluErf;
  float* out = nullptr;  // [M, N], leading dimension ldo: C itself, or apart from C
  int64_t ldo = 0;
};

// `packed_b`, when given, is B already packed by pack_b_blocks (a weight reused by many products):
// B itself is then read only by products of under four rows, which never pack it.
// `bias`, when given, is N values added to every row of the result as it is written (linear's
// b), where filling C with them first would take one more pass over C. Without `accumulate` the
// bits are those of C = bias, then C += A·B.
void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa, const float* B,
          int64_t rsb, int64_t csb, float* C, int64_t ldc, bool accumulate,
          const float* packed_b = nullptr, const float* bias = nullptr,
          const GemmActivation* activation = nullptr);

// B[K, N] (read through strides) in the micro-panels of every block, in the order gemm reads them,
// 64-byte aligned as the micro-kernel loads them.
class PackedB {
 public:
  const float* data() const { return data_; }

 private:
  friend PackedB pack_b_blocks(int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb);
  std::unique_ptr<float[]> buffer_;  // data_ is its first 64-byte aligned float
  float* data_ = nullptr;
};
PackedB pack_b_blocks(int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb);

namespace detail {
// For the tests: over 128 rows on several threads, the thread that calls gemm stops before
// packing the first panel of the B its threads share (a thread whose core was taken mid-packing),
// until another thread has given up waiting for that panel, or at most this long; 0 ends it.
void delay_shared_packing_for_testing(int microseconds);
// For the tests: how many times, since the program started, a thread packed B for itself because
// a panel of the shared B was not done in time.
int64_t own_packings_for_testing();
}  // namespace detail

// Under this many rows of A, B is read where it lies instead of packed (packing B, K·N values,
// would cost about what the product does).
inline constexpr int64_t kGemmFewRows = 4;

// Below this many flops a GEMM runs on one thread (waking the others would cost more than it
// saves).
inline constexpr double kParallelFlops = 2.0e6;

}  // namespace anatomy
