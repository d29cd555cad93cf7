// FusedMultiHeadAttention: the book's multi-head attention computed with one [3E, E] projection
// (qkv: every head's q rows, then k rows, then v rows) and the heads as a batch dim, so each step
// is one big matmul. The same function as MultiHeadAttention from the same weights
// (to_fused_layout / to_book_layout convert them); what the models use by default
// (attention_type "fused"), and the layout with a KV cache and position schemes that act inside
// attention (AttentionPositions: rotary, ALiBi, relative).
#pragma once

#include "models/attention.hpp"
#include "models/attention_positions.hpp"
#include "models/config.hpp"

namespace anatomy::models {

class FusedMultiHeadAttention : public Attention {
 public:
  // positions: the scheme acting inside attention, or null (absolute positions, cross-attention).
  explicit FusedMultiHeadAttention(const TransformerConfig& config,
                                   std::shared_ptr<AttentionPositions> positions = nullptr);
  using Attention::forward;
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states,
                 const Tensor& mask) override;
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states, const Tensor& mask,
                 KVCache& cache, bool static_kv) override;
  bool has_kv_cache() const override { return true; }
  std::pair<Tensor, Tensor> last_queries_keys() const override { return {last_q, last_k}; }

  int64_t num_heads, head_dim;
  float dropout_p;
  std::shared_ptr<nn::Linear> qkv, output_linear;
  std::shared_ptr<AttentionPositions> positions;  // may be null

 private:
  Tensor last_q, last_k;  // of the last forward, [B, H, Tq, D] and [B, H, Tk, D]
  Tensor attend(const Tensor& query_states, const Tensor& key_value_states, const Tensor& mask,
                KVCache* cache, bool static_kv);
};

}  // namespace anatomy::models
