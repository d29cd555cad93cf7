#include "models/attention_head.hpp"

namespace anatomy::models {

AttentionHead::AttentionHead(int64_t embed_dim, int64_t head_dim, float p, bool bias)
    : dropout_p(p) {
  q = register_module("q", std::make_shared<nn::Linear>(embed_dim, head_dim, bias));
  k = register_module("k", std::make_shared<nn::Linear>(embed_dim, head_dim, bias));
  v = register_module("v", std::make_shared<nn::Linear>(embed_dim, head_dim, bias));
}

Tensor AttentionHead::forward(const Tensor& query_states, const Tensor& key_value_states,
                              const Tensor& mask) {
  const Tensor queries = q->forward(query_states), keys = k->forward(key_value_states);
  auto [out, weights] = scaled_dot_product_attention(queries, keys, v->forward(key_value_states),
                                                     mask, dropout_p, is_training());
  last_attention = weights.detach();
  last_query = queries.detach();
  last_key = keys.detach();
  return out;
}

}  // namespace anatomy::models
