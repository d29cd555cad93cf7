// LayerNorm over the trailing normalized_shape dims (torch.nn.LayerNorm); weight ones, bias zeros.
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class LayerNorm : public Module {
 public:
  // bias=false (PyTorch >= 2.1's option, nanoGPT's default) keeps the gain and drops the shift.
  LayerNorm(Shape normalized_shape, float eps = 1e-5f, bool elementwise_affine = true,
            bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  Shape normalized_shape;
  float eps;
  Tensor weight, bias;  // undefined without elementwise_affine (bias also without bias)
};

}  // namespace anatomy::nn
