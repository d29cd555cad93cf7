// Linear: y = x Wᵀ + b, W of shape [out_features, in_features] (torch.nn.Linear).
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class Linear : public Module {
 public:
  // PyTorch's default init: W ~ U(-1/√in, 1/√in) (Kaiming-uniform with a = √5), b likewise.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  // Shares `w` as this layer's weight (weight tying); `w` must be [out_features, in_features].
  void tie_weight(const Tensor& w) {
    set_parameter("weight", w);
    weight = w;
  }

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias is undefined without bias
};

}  // namespace anatomy::nn
