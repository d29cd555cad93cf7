// expect: eps belongs inside the square root
#include "exercise.hpp"

using namespace anatomy;

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  return x / (sqrt(mean(x * x, {-1}, true)) + eps) * weight;
}
