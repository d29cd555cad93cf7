// Dropout(p): zeroes elements with probability p in training mode and scales the rest by
// 1/(1-p); the identity in eval mode (torch.nn.Dropout).
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p = 0.5f);
  Tensor forward(const Tensor& x) override { return dropout(x, p, is_training()); }
  std::string extra_repr() const override { return fmt::format("p={}", p); }

  float p;
};

}  // namespace anatomy::nn
