// TransformerDecoderLayer: masked self-attention, encoder-decoder (cross) attention and the
// feed-forward layer, each with its residual connection and norm (pre or post, as the
// encoder's). The book leaves the decoder as homework; this is it, in the same style.
//
// Without cross-attention (a decoder-only language model) the layer is self-attention plus
// feed-forward, and its norms are layer_norm_1 and layer_norm_2.
#pragma once

#include "models/attention.hpp"
#include "models/config.hpp"

namespace anatomy::models {

struct DecoderLayerParts {
  std::shared_ptr<Attention> self_attention;
  std::shared_ptr<Attention> cross_attention;  // null: a decoder-only layer
  std::shared_ptr<nn::Module> feed_forward;
  std::shared_ptr<nn::Module> layer_norm_1, layer_norm_2, layer_norm_3;  // 3: with cross only
  float dropout_p = 0.1f;
  bool pre_layer_norm = true;
};

class TransformerDecoderLayer : public nn::Module {
 public:
  TransformerDecoderLayer(const TransformerConfig& config, bool cross_attention);
  explicit TransformerDecoderLayer(DecoderLayerParts parts);
  // Module's one-input forward stays visible beside this class's own (it says which to call)
  // rather than hidden by it, which clang reports (-Woverloaded-virtual).
  using nn::Module::forward;
  // x [B, T, E]; memory [B, S, E] (the encoder's output, ignored without cross-attention).
  // With caches (incremental decoding) x holds only the newest positions.
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                 const Tensor& memory_mask, KVCache* self_cache = nullptr,
                 KVCache* cross_cache = nullptr);

  bool pre_layer_norm;
  std::shared_ptr<nn::Module> layer_norm_1, layer_norm_2, layer_norm_3;
  std::shared_ptr<Attention> self_attention, cross_attention;
  std::shared_ptr<nn::Module> feed_forward;
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
