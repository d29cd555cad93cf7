// TransformerEncoderLayer: self-attention then feed-forward, each inside a residual connection
// with layer norm. Pre-LN (the book's choice, stabler to train):
//   x = x + attention(layer_norm_1(x));  x = x + feed_forward(layer_norm_2(x))
// Post-LN (the paper's):
//   x = layer_norm_1(x + attention(x));  x = layer_norm_2(x + feed_forward(x))
#pragma once

#include "models/feed_forward.hpp"
#include "models/multi_head_attention.hpp"

namespace anatomy::models {

class TransformerEncoderLayer : public nn::Module {
 public:
  explicit TransformerEncoderLayer(const TransformerConfig& config);
  Tensor forward(const Tensor& x, const Tensor& mask);  // [B, T, E] -> [B, T, E]
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }

  bool pre_layer_norm;
  std::shared_ptr<nn::LayerNorm> layer_norm_1, layer_norm_2;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<FeedForward> feed_forward;
  std::shared_ptr<nn::Dropout> dropout;  // on the attention output, as the paper's residual dropout
};

// A LayerNorm over the hidden size with the config's eps.
std::shared_ptr<nn::LayerNorm> make_layer_norm(const TransformerConfig& config);

}  // namespace anatomy::models
