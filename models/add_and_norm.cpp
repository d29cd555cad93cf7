#include "models/add_and_norm.hpp"

#include <typeinfo>

namespace anatomy::models {

AddAndNorm add_and_norm(const Tensor& residual, const Tensor& sublayer_output, nn::Dropout& dropout,
                        nn::Module& norm) {
  if (typeid(dropout) == typeid(nn::Dropout) && typeid(norm) == typeid(nn::LayerNorm)) {
    const auto& ln = static_cast<const nn::LayerNorm&>(norm);
    auto fused = dropout_add_layer_norm(sublayer_output, residual, dropout.p, dropout.is_training(),
                                        ln.normalized_shape, ln.weight, ln.bias, ln.eps);
    return {fused.sum, fused.normed};
  }
  Tensor sum = residual + dropout.forward(sublayer_output);
  return {sum, norm.forward(sum)};
}

}  // namespace anatomy::models
