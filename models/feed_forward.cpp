#include "models/feed_forward.hpp"

namespace anatomy::models {

FeedForward::FeedForward(const TransformerConfig& c) {
  linear_1 = register_module(
      "linear_1", std::make_shared<nn::Linear>(c.hidden_size, c.intermediate_size, c.bias));
  linear_2 = register_module(
      "linear_2", std::make_shared<nn::Linear>(c.intermediate_size, c.hidden_size, c.bias));
  if (c.hidden_act == "relu")
    gelu = register_module("gelu", std::make_shared<nn::ReLU>());
  else
    gelu = register_module("gelu",
                           std::make_shared<nn::GELU>(c.hidden_act == "gelu" ? "none" : "tanh"));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor FeedForward::forward(const Tensor& x) {
  return dropout->forward(linear_2->forward(gelu->forward(linear_1->forward(x))));
}

}  // namespace anatomy::models
