// DetectAnomaly: torch.autograd.detect_anomaly for this library. While a guard lives, every op's
// output is checked for NaN and +Inf, every gradient the backward pass computes for NaN and either
// infinity, and the first one found throws an Error naming the op (by its backward's name, e.g.
// "SoftmaxBackward0"), whether its output or the gradient for its input i went bad, and, given
// the model's named parameters, the nearest parameter that feeds it, which names the module
// (e.g. "decoder.layers.1.feed_forward.linear_1.weight"). Slow: a debugging mode.
//
// A forward output may hold -Inf: that is how a mask hides a position from attention (its score
// becomes -Inf, so softmax gives it a weight of exactly 0). A value that really diverges still
// shows: as +Inf or NaN further on (a loss of -Inf log-probability is +Inf), or in the gradients.
//
//   DetectAnomaly guard(model.named_parameters());
//   Tensor loss = ...; loss.backward();   // throws at the first NaN or Inf, forward or backward
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy {

class DetectAnomaly {
 public:
  explicit DetectAnomaly(std::vector<std::pair<std::string, Tensor>> named_parameters = {});
  ~DetectAnomaly();
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;
};

bool is_anomaly_enabled();

namespace detail {
// Called by the engine: throws when `t` holds NaN or Inf (-Inf passes when `allow_negative_inf`:
// the engine allows it in forward outputs). `what` says where it came from; `inputs` are the op's
// inputs, searched for the nearest named parameter.
void check_anomaly(const Tensor& t, const std::string& what, const std::vector<Tensor>& inputs,
                   const std::vector<std::shared_ptr<Node>>& nodes, bool allow_negative_inf);
}  // namespace detail

}  // namespace anatomy
