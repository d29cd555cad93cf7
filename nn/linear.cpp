#include "nn/linear.hpp"

#include <cmath>

#include "nn/init.hpp"

namespace anatomy::nn {

Linear::Linear(int64_t in, int64_t out, bool has_bias) : in_features(in), out_features(out) {
  if (in < 0 || out < 0)
    throw Error(fmt::format("Linear: sizes must be non-negative (got {}, {})", in, out));
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0f));
  if (has_bias) {
    bias = register_parameter("bias", empty({out}));
    const float bound = in > 0 ? 1.0f / std::sqrt(static_cast<float>(in)) : 0.0f;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined() ? "True" : "False");
}

}  // namespace anatomy::nn
