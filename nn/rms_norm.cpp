#include "nn/rms_norm.hpp"

namespace anatomy::nn {

RMSNorm::RMSNorm(int64_t size, float eps_) : eps(eps_) {
  weight = register_parameter("weight", ones({size}));
}

Tensor RMSNorm::forward(const Tensor& x) {
  if (x.dim() == 0 || x.size(-1) != weight.size(0))
    throw Error(fmt::format("RMSNorm: expected input [..., {}], got {}", weight.size(0),
                            to_string(x.shape())));
  // Composed of differentiable ops, so the backward is autograd's.
  return x * rsqrt(mean(x * x, {-1}, true) + eps) * weight;
}

std::string RMSNorm::extra_repr() const {
  return fmt::format("({},), eps={}, elementwise_affine=True", weight.size(0), eps);
}

}  // namespace anatomy::nn
