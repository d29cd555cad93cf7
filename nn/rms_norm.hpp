// RMSNorm (Zhang & Sennrich, 2019; torch.nn.RMSNorm, LLaMA's LlamaRMSNorm): each vector divided by
// its root mean square over the last dimension, then scaled by a learned gain (weight, ones).
// Unlike LayerNorm no mean is subtracted and there is no bias: one reduction instead of two.
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t normalized_size, float eps = 1e-6f);
  // x [..., E] -> x * rsqrt(mean(x², -1) + eps) * weight: LLaMA's placement of eps, inside the
  // square root.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  float eps;
  Tensor weight;  // [E]
};

}  // namespace anatomy::nn
