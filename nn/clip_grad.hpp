// clip_grad_norm_: scales all gradients so their joint norm is at most max_norm, as
// torch.nn.utils.clip_grad_norm_; returns the norm before clipping.
#pragma once

#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy::nn {

// norm_type 2 (Euclidean) or infinity.
float clip_grad_norm_(const std::vector<Tensor>& parameters, float max_norm,
                      float norm_type = 2.0f);

}  // namespace anatomy::nn
