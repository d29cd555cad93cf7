#include "models/transformer_encoder_layer.hpp"

namespace anatomy::models {

std::shared_ptr<nn::LayerNorm> make_layer_norm(const TransformerConfig& c) {
  return std::make_shared<nn::LayerNorm>(Shape{c.hidden_size}, static_cast<float>(c.layer_norm_eps),
                                         true, c.bias);
}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerConfig& c)
    : pre_layer_norm(c.pre_layer_norm) {
  layer_norm_1 = register_module("layer_norm_1", make_layer_norm(c));
  layer_norm_2 = register_module("layer_norm_2", make_layer_norm(c));
  attention = register_module("attention", make_attention(c));
  feed_forward = register_module("feed_forward", std::make_shared<FeedForward>(c));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x, const Tensor& mask) {
  if (pre_layer_norm) {
    Tensor h = layer_norm_1->forward(x);
    Tensor y = x + dropout->forward(attention->forward(h, h, mask));
    return y + feed_forward->forward(layer_norm_2->forward(y));
  }
  Tensor y = layer_norm_1->forward(x + dropout->forward(attention->forward(x, x, mask)));
  return layer_norm_2->forward(y + feed_forward->forward(y));
}

}  // namespace anatomy::models
