// MultiHeadAttention, the book's: one AttentionHead per head, each with its own q, k, v
// projections of size head_dim = hidden_size / num_attention_heads; their outputs are
// concatenated and mixed by output_linear.
//
// Parameter names: heads.<h>.{q,k,v}.{weight,bias}, output_linear.{weight,bias}. The same
// function, with one QKV projection and a KV cache, is FusedMultiHeadAttention
// (fused_multi_head_attention.hpp); to_fused_layout() converts the weights.
#pragma once

#include "models/attention.hpp"
#include "models/attention_head.hpp"
#include "models/config.hpp"

namespace anatomy::models {

class MultiHeadAttention : public Attention {
 public:
  explicit MultiHeadAttention(const TransformerConfig& config);
  using Attention::forward;
  // query_states [B, Tq, E], key_value_states [B, Tk, E], mask broadcasting to [B, Tq, Tk]
  // -> [B, Tq, E]
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states,
                 const Tensor& mask) override;
  // The heads' last queries and keys stacked (only when asked: a picture, not every step).
  std::pair<Tensor, Tensor> last_queries_keys() const override;

  std::shared_ptr<nn::ModuleList> heads;
  std::shared_ptr<nn::Linear> output_linear;
};

}  // namespace anatomy::models
