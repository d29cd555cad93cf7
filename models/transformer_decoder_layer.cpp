#include "models/transformer_decoder_layer.hpp"

#include "models/transformer_encoder_layer.hpp"

namespace anatomy::models {

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerConfig& c, bool cross)
    : pre_layer_norm(c.pre_layer_norm) {
  layer_norm_1 = register_module("layer_norm_1", make_layer_norm(c));
  self_attention = register_module("self_attention", make_attention(c));
  layer_norm_2 = register_module("layer_norm_2", make_layer_norm(c));
  if (cross) {
    cross_attention = register_module("cross_attention", make_attention(c));
    layer_norm_3 = register_module("layer_norm_3", make_layer_norm(c));
  }
  feed_forward = register_module("feed_forward", std::make_shared<FeedForward>(c));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
}

Tensor TransformerDecoderLayer::forward(const Tensor& x, const Tensor& memory,
                                        const Tensor& self_mask, const Tensor& memory_mask,
                                        KVCache* self_cache, KVCache* cross_cache) {
  // The norm before (pre-LN) or after (post-LN) the feed-forward block.
  const auto& ff_norm = cross_attention ? layer_norm_3 : layer_norm_2;
  Tensor y = x;
  if (pre_layer_norm) {
    Tensor h = layer_norm_1->forward(y);
    y = y + dropout->forward(self_attention->forward(h, h, self_mask, self_cache));
    if (cross_attention) {
      h = layer_norm_2->forward(y);
      y = y + dropout->forward(cross_attention->forward(h, memory, memory_mask, cross_cache, true));
    }
    return y + feed_forward->forward(ff_norm->forward(y));
  }
  y = layer_norm_1->forward(y +
                            dropout->forward(self_attention->forward(y, y, self_mask, self_cache)));
  if (cross_attention)
    y = layer_norm_2->forward(
        y + dropout->forward(cross_attention->forward(y, memory, memory_mask, cross_cache, true)));
  return ff_norm->forward(y + feed_forward->forward(y));
}

}  // namespace anatomy::models
