// TransformerEncoderLayer: self-attention then feed-forward, each inside a residual connection
// with a norm. Pre-LN (the book's choice, stabler to train):
//   x = x + attention(layer_norm_1(x));  x = x + feed_forward(layer_norm_2(x))
// Post-LN (the paper's):
//   x = layer_norm_1(x + attention(x));  x = layer_norm_2(x + feed_forward(x))
//
// The layer never names a concrete class: its attention, feed-forward and norms are parts
// it is given (as the Annotated Transformer's EncoderLayer(size, self_attn, feed_forward,
// dropout)), or that the config names through the registry (registry.hpp).
#pragma once

#include "models/attention.hpp"
#include "models/config.hpp"

namespace anatomy::models {

struct EncoderLayerParts {
  std::shared_ptr<Attention> attention;
  std::shared_ptr<nn::Module> feed_forward;  // [B, T, E] -> [B, T, E]
  std::shared_ptr<nn::Module> layer_norm_1, layer_norm_2;
  float dropout_p = 0.1f;  // on the attention output, the paper's residual dropout
  bool pre_layer_norm = true;
};

class TransformerEncoderLayer : public nn::Module {
 public:
  explicit TransformerEncoderLayer(const TransformerConfig& config);  // the config's parts
  explicit TransformerEncoderLayer(EncoderLayerParts parts);          // your own
  Tensor forward(const Tensor& x, const Tensor& mask);                // [B, T, E] -> [B, T, E]
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }

  bool pre_layer_norm;
  std::shared_ptr<nn::Module> layer_norm_1, layer_norm_2;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<nn::Module> feed_forward;
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
