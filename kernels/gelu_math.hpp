// GELU and its derivative on one SIMD batch, shared by the gelu op (elementwise.cpp) and the
// GEMM epilogue of linear_gelu (gemm.cpp), so the fused and the composed forms compute the very
// same bits. Internal: included by .cpp files only, as simd.hpp.
#pragma once

#include "kernels/simd.hpp"

namespace anatomy::gelu_math {

using simd::batch;

inline constexpr float kInvSqrt2 = 0.70710678118654752f;
inline constexpr float kInvSqrt2Pi = 0.39894228040143268f;
inline constexpr float kSqrt2OverPi = 0.79788456080286536f;
inline constexpr float kCoeff = 0.044715f;

// erf(z) by Abramowitz and Stegun's formula 7.1.26, given e = exp(-z²): absolute error under
// 1.5e-7, the formula PyTorch's vectorized CPU GELU uses. It costs one division and the exp that
// GELU's backward needs anyway for φ, where xsimd::erf evaluates two approximations and
// selects between them.
inline batch erf_with_exp(batch z, batch e) {
  const batch one(1.0f);
  const batch t = one / (batch(0.3275911f) * xsimd::abs(z) + one);
  batch r = batch(1.061405429f) * t + batch(-1.453152027f);
  r = r * t + batch(1.421413741f);
  r = r * t + batch(-0.284496736f);
  r = r * t + batch(0.254829592f);
  const batch y = one - r * t * e;  // erf(|z|)
  return xsimd::select(z < batch(0.0f), -y, y);
}

// x Φ(x) with Φ(x) = ½(1 + erf(x/√2)); exp(-(x/√2)²) = exp(-x²/2) is also √(2π) φ(x).
inline batch gelu_erf(batch x) {
  const batch e = xsimd::exp(batch(-0.5f) * x * x);
  return batch(0.5f) * x * (batch(1.0f) + erf_with_exp(x * batch(kInvSqrt2), e));
}

// d(x Φ(x))/dx = Φ(x) + x φ(x)
inline batch gelu_erf_grad(batch x) {
  const batch e = xsimd::exp(batch(-0.5f) * x * x);
  const batch cdf = batch(0.5f) * (batch(1.0f) + erf_with_exp(x * batch(kInvSqrt2), e));
  const batch pdf = batch(kInvSqrt2Pi) * e;
  return cdf + x * pdf;
}

// ½ x (1 + tanh(k(x + c x³))), k = √(2/π): the "tanh" approximation (GPT-2's gelu_new).
inline batch gelu_tanh(batch x) {
  const batch u = batch(kSqrt2OverPi) * (x + batch(kCoeff) * x * x * x);
  return batch(0.5f) * x * (batch(1.0f) + xsimd::tanh(u));
}

// u = k(x + c x³): d/dx = ½(1 + tanh u) + ½ x (1 - tanh²u) k (1 + 3c x²)
inline batch gelu_tanh_grad(batch x) {
  const batch x2 = x * x;
  const batch t = xsimd::tanh(batch(kSqrt2OverPi) * (x + batch(kCoeff) * x2 * x));
  const batch du = batch(kSqrt2OverPi) * (batch(1.0f) + batch(3.0f * kCoeff) * x2);
  return batch(0.5f) * (batch(1.0f) + t) + batch(0.5f) * x * (batch(1.0f) - t * t) * du;
}

}  // namespace anatomy::gelu_math
