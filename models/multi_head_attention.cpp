#include "models/multi_head_attention.hpp"

namespace anatomy::models {

MultiHeadAttention::MultiHeadAttention(const TransformerConfig& config) {
  const int64_t E = config.hidden_size, D = config.head_dim();
  const auto dropout_p = static_cast<float>(config.attention_probs_dropout_prob);
  heads = register_module("heads", std::make_shared<nn::ModuleList>());
  for (int64_t h = 0; h < config.num_attention_heads; ++h)
    heads->push_back(std::make_shared<AttentionHead>(E, D, dropout_p, config.bias));
  output_linear = register_module("output_linear", std::make_shared<nn::Linear>(E, E, config.bias));
}

Tensor MultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                   const Tensor& mask) {
  check_attention_inputs("MultiHeadAttention", query_states, key_value_states,
                         output_linear->in_features);
  std::vector<Tensor> outputs, weights;
  for (const auto& module : *heads) {
    auto& head = dynamic_cast<AttentionHead&>(*module);
    outputs.push_back(head.forward(query_states, key_value_states, mask));  // [B, Tq, D]
    weights.push_back(head.last_attention);                                 // [B, Tq, Tk]
  }
  last_attention = stack(weights, 1);               // [B, H, Tq, Tk]
  return output_linear->forward(cat(outputs, -1));  // [B, Tq, H·D] -> [B, Tq, E]
}

std::pair<Tensor, Tensor> MultiHeadAttention::last_queries_keys() const {
  std::vector<Tensor> queries, keys;
  for (const auto& module : *heads) {
    const auto& head = dynamic_cast<const AttentionHead&>(*module);
    if (!head.last_query.defined()) return {};  // no forward yet
    queries.push_back(head.last_query);
    keys.push_back(head.last_key);
  }
  return {stack(queries, 1), stack(keys, 1)};  // [B, H, Tq, D], [B, H, Tk, D]
}

}  // namespace anatomy::models
