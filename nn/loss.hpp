// Loss modules (torch.nn.CrossEntropyLoss, MSELoss) over the functional losses.
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions options = {}) : options(std::move(options)) {}
  // Module's one-input forward stays visible (it says which forward to call) rather than hidden
  // by the two-input one, which clang reports (-Woverloaded-virtual).
  using Module::forward;
  Tensor forward(const Tensor& logits, const Tensor& target) {
    return cross_entropy(logits, target, options);
  }
  Tensor operator()(const Tensor& logits, const Tensor& target) { return forward(logits, target); }
  CrossEntropyOptions options;
};

class MSELoss : public Module {
 public:
  explicit MSELoss(std::string reduction = "mean") : reduction(std::move(reduction)) {}
  using Module::forward;  // visible, not hidden: see CrossEntropyLoss
  Tensor forward(const Tensor& input, const Tensor& target) {
    return mse_loss(input, target, reduction);
  }
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string reduction;
};

}  // namespace anatomy::nn
