// Exercise 03: layer normalization over the last dimension, forward and backward.
#pragma once

#include "autograd/autograd.hpp"

struct LayerNormFunction : anatomy::Function<LayerNormFunction> {
  static constexpr const char* name = "LayerNormBackward";
  static constexpr float eps = 1e-5f;
  // x [..., N], weight [N], bias [N] -> (x - mean) / sqrt(var + eps) * weight + bias, the mean
  // and the (biased) variance taken over the last dimension
  static anatomy::Tensor forward(anatomy::Context& ctx, const anatomy::Tensor& x,
                                 const anatomy::Tensor& weight, const anatomy::Tensor& bias);
  // grad [..., N] -> {dL/dx, dL/dweight, dL/dbias}
  static std::vector<anatomy::Tensor> backward(anatomy::Context& ctx, const anatomy::Tensor& grad);
};
