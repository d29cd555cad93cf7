#include "models/feed_forward.hpp"

#include <typeinfo>

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
  // The book's Linear then GELU run as one fused op (linear_gelu: GELU applied as the GEMM writes
  // each tile, its derivative and the bias gradient in one pass); the same function as the two
  // modules in a row. A student's own activation or first layer (another class, a subclass)
  // goes through its modules as written.
  const nn::Module &act_module = *gelu, &first = *linear_1;
  const auto* act = dynamic_cast<const nn::GELU*>(&act_module);
  if (act && typeid(act_module) == typeid(nn::GELU) && typeid(first) == typeid(nn::Linear))
    return dropout->forward(
        linear_2->forward(linear_gelu(x, linear_1->weight, linear_1->bias, act->approximate)));
  return dropout->forward(linear_2->forward(gelu->forward(linear_1->forward(x))));
}

}  // namespace anatomy::models
