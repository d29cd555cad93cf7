// Activation modules (torch.nn.GELU, ReLU, Softmax): thin wrappers over the functional ops, so
// they can sit in a Sequential and show in the printed tree.
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::string extra_repr() const override { return fmt::format("approximate='{}'", approximate); }
  std::string approximate;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override { return softmax(x, dim); }
  std::string extra_repr() const override { return fmt::format("dim={}", dim); }
  int64_t dim;
};

}  // namespace anatomy::nn
