#include "nn/layer_norm.hpp"

namespace anatomy::nn {

LayerNorm::LayerNorm(Shape shape, float eps_, bool affine, bool has_bias)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    if (has_bias) bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  // PyTorch prints the shape as a Python tuple: (768,)
  std::string dims;
  for (size_t i = 0; i < normalized_shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  if (normalized_shape.size() == 1) dims += ",";
  return fmt::format("({}), eps={}, elementwise_affine={}", dims, eps,
                     weight.defined() ? "True" : "False");
}

}  // namespace anatomy::nn
