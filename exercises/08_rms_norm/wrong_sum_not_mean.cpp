// expect: you divided by the root of the sum of squares
#include "exercise.hpp"

using namespace anatomy;

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  return x * rsqrt(sum(x * x, {-1}, true) + eps) * weight;
}
