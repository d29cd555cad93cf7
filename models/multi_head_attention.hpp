// Multi-head attention, in two layouts that compute the same function from the same weights:
//
// - MultiHeadAttention, the book's: a ModuleList of AttentionHeads whose outputs are
//   concatenated and mixed by output_linear. Parameter names: heads.<h>.{q,k,v}.{weight,bias},
//   output_linear.{weight,bias}.
// - FusedMultiHeadAttention: one [3E, E] projection (qkv: all heads' q rows, then k, then v),
//   heads as a batch dim, so each step is one big matmul. What the models use by default.
//   convert_attention_layout() (state_dict_layout.hpp) maps one layout's weights to the other.
//
// Both do self-attention (key_value_states = query_states) and encoder-decoder attention
// (queries from the decoder, keys and values from the encoder), keep the last attention weights
// [B, H, Tq, Tk] for pictures, and share the Attention interface so layers can hold either.
#pragma once

#include "models/attention_head.hpp"
#include "models/config.hpp"

namespace anatomy::models {

// Keys and values of earlier positions, [B, H, T, D], kept between decoding steps.
struct KVCache {
  Tensor key, value;
  int64_t length() const { return key.defined() ? key.size(2) : 0; }
};

class Attention : public nn::Module {
 public:
  // query_states [B, Tq, E], key_value_states [B, Tk, E]; mask broadcasts to [B, Tq, Tk].
  // With a cache: for self-attention the new keys/values are appended to it; for cross-attention
  // (`static_kv`) they are computed once and reused.
  virtual Tensor forward(const Tensor& query_states, const Tensor& key_value_states,
                         const Tensor& mask, KVCache* cache = nullptr, bool static_kv = false) = 0;
  Tensor forward(const Tensor& hidden_state) override {
    return forward(hidden_state, hidden_state, Tensor());
  }
  Tensor last_attention;  // [B, H, Tq, Tk]
};

class MultiHeadAttention : public Attention {
 public:
  explicit MultiHeadAttention(const TransformerConfig& config);
  using Attention::forward;
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states, const Tensor& mask,
                 KVCache* cache = nullptr, bool static_kv = false) override;

  std::shared_ptr<nn::ModuleList> heads;
  std::shared_ptr<nn::Linear> output_linear;
};

class FusedMultiHeadAttention : public Attention {
 public:
  explicit FusedMultiHeadAttention(const TransformerConfig& config);
  using Attention::forward;
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states, const Tensor& mask,
                 KVCache* cache = nullptr, bool static_kv = false) override;

  int64_t num_heads, head_dim;
  float dropout_p;
  std::shared_ptr<nn::Linear> qkv, output_linear;
};

// The attention module the config asks for.
std::shared_ptr<Attention> make_attention(const TransformerConfig& config);

}  // namespace anatomy::models
