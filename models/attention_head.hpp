// AttentionHead (the book's): one head with its own q, k, v projections from embed_dim to
// head_dim. Queries come from one sequence and keys/values from another (the same one for
// self-attention).
#pragma once

#include "models/scaled_dot_product_attention.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class AttentionHead : public nn::Module {
 public:
  // dropout_p: dropout on the attention weights in training (0 in the book's version);
  // bias: whether the q, k, v projections have biases (the book's do).
  AttentionHead(int64_t embed_dim, int64_t head_dim, float dropout_p = 0.0f, bool bias = true);
  // [B, Tq, E], [B, Tk, E], mask broadcasting to [B, Tq, Tk] -> [B, Tq, D]
  Tensor forward(const Tensor& query_states, const Tensor& key_value_states,
                 const Tensor& mask = Tensor());
  Tensor forward(const Tensor& hidden_state) override {
    return forward(hidden_state, hidden_state);
  }

  std::shared_ptr<nn::Linear> q, k, v;
  float dropout_p;
  Tensor last_attention;        // [B, Tq, Tk] of the last forward
  Tensor last_query, last_key;  // [B, Tq, D] and [B, Tk, D] of the last forward
};

}  // namespace anatomy::models
