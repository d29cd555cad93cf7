#include "models/transformer_decoder_layer.hpp"

#include "models/add_and_norm.hpp"
#include "models/registry.hpp"

namespace anatomy::models {

namespace {

Tensor attend(Attention& attention, const Tensor& q, const Tensor& kv, const Tensor& mask,
              KVCache* cache, bool static_kv) {
  return cache ? attention.forward(q, kv, mask, *cache, static_kv) : attention.forward(q, kv, mask);
}

}  // namespace

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerConfig& c, bool cross)
    : TransformerDecoderLayer(DecoderLayerParts{
          .self_attention = make_attention(c),
          .cross_attention = cross ? make_attention(c, /*self_attention=*/false) : nullptr,
          .feed_forward = make_feed_forward(c),
          .layer_norm_1 = make_norm(c),
          .layer_norm_2 = make_norm(c),
          .layer_norm_3 = cross ? make_norm(c) : nullptr,
          .dropout_p = static_cast<float>(c.hidden_dropout_prob),
          .pre_layer_norm = c.pre_layer_norm}) {}

TransformerDecoderLayer::TransformerDecoderLayer(DecoderLayerParts p)
    : pre_layer_norm(p.pre_layer_norm) {
  layer_norm_1 = register_module("layer_norm_1", p.layer_norm_1);
  self_attention = register_module("self_attention", p.self_attention);
  layer_norm_2 = register_module("layer_norm_2", p.layer_norm_2);
  if (p.cross_attention) {
    if (!p.layer_norm_3)
      throw Error("TransformerDecoderLayer: cross-attention needs a third norm (layer_norm_3)");
    cross_attention = register_module("cross_attention", p.cross_attention);
    layer_norm_3 = register_module("layer_norm_3", p.layer_norm_3);
  }
  feed_forward = register_module("feed_forward", p.feed_forward);
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(p.dropout_p));
}

Tensor TransformerDecoderLayer::forward(const Tensor& x, const Tensor& memory,
                                        const Tensor& self_mask, const Tensor& memory_mask,
                                        KVCache* self_cache, KVCache* cross_cache) {
  // The norm before (pre-LN) or after (post-LN) the feed-forward block.
  const auto& ff_norm = cross_attention ? layer_norm_3 : layer_norm_2;
  if (pre_layer_norm) {
    // Each residual step gives the new y and the norm of y that the next sublayer reads.
    Tensor h = layer_norm_1->forward(x);
    AddAndNorm r = add_and_norm(x, attend(*self_attention, h, h, self_mask, self_cache, false),
                                *dropout, cross_attention ? *layer_norm_2 : *ff_norm);
    if (cross_attention)
      r = add_and_norm(r.sum,
                       attend(*cross_attention, r.normed, memory, memory_mask, cross_cache, true),
                       *dropout, *ff_norm);
    return r.sum + feed_forward->forward(r.normed);
  }
  // y = norm(y + dropout(attention(y))) after each attention
  Tensor y = add_and_norm(x, attend(*self_attention, x, x, self_mask, self_cache, false), *dropout,
                          *layer_norm_1)
                 .normed;
  if (cross_attention)
    y = add_and_norm(y, attend(*cross_attention, y, memory, memory_mask, cross_cache, true),
                     *dropout, *layer_norm_2)
            .normed;
  return ff_norm->forward(y + feed_forward->forward(y));
}

}  // namespace anatomy::models
