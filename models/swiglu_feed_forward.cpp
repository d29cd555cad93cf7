#include "models/swiglu_feed_forward.hpp"

namespace anatomy::models {

SwiGLUFeedForward::SwiGLUFeedForward(const TransformerConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  gate_proj = register_module("gate_proj", std::make_shared<nn::Linear>(E, I, c.bias));
  up_proj = register_module("up_proj", std::make_shared<nn::Linear>(E, I, c.bias));
  down_proj = register_module("down_proj", std::make_shared<nn::Linear>(I, E, c.bias));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor SwiGLUFeedForward::forward(const Tensor& x) {
  const Tensor gate = gate_proj->forward(x);
  return dropout->forward(down_proj->forward(gate * sigmoid(gate) * up_proj->forward(x)));
}

}  // namespace anatomy::models
