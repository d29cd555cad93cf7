#include "models/transformer_encoder_layer.hpp"

#include "models/add_and_norm.hpp"
#include "models/registry.hpp"

namespace anatomy::models {

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerConfig& c)
    : TransformerEncoderLayer(
          EncoderLayerParts{.attention = make_attention(c),
                            .feed_forward = make_feed_forward(c),
                            .layer_norm_1 = make_norm(c),
                            .layer_norm_2 = make_norm(c),
                            .dropout_p = static_cast<float>(c.hidden_dropout_prob),
                            .pre_layer_norm = c.pre_layer_norm}) {}

TransformerEncoderLayer::TransformerEncoderLayer(EncoderLayerParts p)
    : pre_layer_norm(p.pre_layer_norm) {
  // Registered in this order so that parameters are named and listed as before the parts
  // were pluggable: checkpoints and golden files keep their order.
  layer_norm_1 = register_module("layer_norm_1", p.layer_norm_1);
  layer_norm_2 = register_module("layer_norm_2", p.layer_norm_2);
  attention = register_module("attention", p.attention);
  feed_forward = register_module("feed_forward", p.feed_forward);
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(p.dropout_p));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x, const Tensor& mask) {
  if (pre_layer_norm) {
    Tensor h = layer_norm_1->forward(x);
    // y = x + dropout(attention(h)), and layer_norm_2(y) for the feed-forward
    auto [y, h2] = add_and_norm(x, attention->forward(h, h, mask), *dropout, *layer_norm_2);
    return y + feed_forward->forward(h2);
  }
  // y = layer_norm_1(x + dropout(attention(x)))
  Tensor y = add_and_norm(x, attention->forward(x, x, mask), *dropout, *layer_norm_1).normed;
  return layer_norm_2->forward(y + feed_forward->forward(y));
}

}  // namespace anatomy::models
