// TransformerDecoderLayer: masked self-attention, encoder-decoder (cross) attention and the
// feed-forward layer, each with its residual connection and layer norm (pre or post, as the
// encoder's). The book leaves the decoder as homework; this is it, in the same style.
//
// Without cross-attention (a decoder-only language model) the layer is self-attention plus
// feed-forward, and its layer norms are layer_norm_1 and layer_norm_2.
#pragma once

#include "models/feed_forward.hpp"
#include "models/multi_head_attention.hpp"

namespace anatomy::models {

class TransformerDecoderLayer : public nn::Module {
 public:
  TransformerDecoderLayer(const TransformerConfig& config, bool cross_attention);
  // x [B, T, E]; memory [B, S, E] (the encoder's output, ignored without cross-attention).
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                 const Tensor& memory_mask, KVCache* self_cache = nullptr,
                 KVCache* cross_cache = nullptr);

  bool pre_layer_norm;
  std::shared_ptr<nn::LayerNorm> layer_norm_1, layer_norm_2, layer_norm_3;
  std::shared_ptr<Attention> self_attention, cross_attention;
  std::shared_ptr<FeedForward> feed_forward;
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
