#include "models/pooler.hpp"

namespace anatomy::models {

Pooler::Pooler(const TransformerConfig& c) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
}

Tensor Pooler::forward(const Tensor& hidden_states) {
  if (hidden_states.dim() != 3 || hidden_states.size(1) == 0)
    throw Error(fmt::format("Pooler: expected hidden states [B, T, E] with T >= 1, got {}",
                            hidden_states.shape().str()));
  return tanh(dense->forward(hidden_states.select(1, 0)));
}

}  // namespace anatomy::models
