// expect: RMSNorm does not subtract the mean
#include "exercise.hpp"

using namespace anatomy;

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  Tensor centered = x - mean(x, {-1}, true);
  return centered * rsqrt(mean(centered * centered, {-1}, true) + eps) * weight;
}
