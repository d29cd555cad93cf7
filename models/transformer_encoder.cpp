#include "models/transformer_encoder.hpp"

#include "models/registry.hpp"

namespace anatomy::models {

Tensor as_key_mask(const Tensor& m) {
  return m.defined() && m.dim() == 2 ? m.to(kFloat32).unsqueeze(1) : m;
}

TransformerEncoder::TransformerEncoder(const TransformerConfig& c) {
  c.validate();
  embeddings = register_module("embeddings", std::make_shared<Embeddings>(c));
  layers = register_module("layers", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layers->push_back(std::make_shared<TransformerEncoderLayer>(c));
  if (c.final_layer_norm) layer_norm = register_module("layer_norm", make_norm(c));
  if (c.add_pooling_layer) pooler = register_module("pooler", std::make_shared<Pooler>(c));
}

Tensor TransformerEncoder::forward(const Tensor& input_ids, const Tensor& attention_mask,
                                   const Tensor& token_type_ids) {
  Tensor x = embeddings->forward(input_ids, 0, token_type_ids);
  const Tensor mask = as_key_mask(attention_mask);
  for (const auto& layer : *layers)
    x = dynamic_cast<TransformerEncoderLayer&>(*layer).forward(x, mask);
  return layer_norm ? layer_norm->forward(x) : x;
}

std::vector<std::pair<Tensor, Tensor>> TransformerEncoder::queries_keys() const {
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const auto& layer : *layers)
    out.push_back(dynamic_cast<TransformerEncoderLayer&>(*layer).attention->last_queries_keys());
  return out;
}

std::vector<Tensor> TransformerEncoder::attentions() const {
  std::vector<Tensor> out;
  for (const auto& layer : *layers)
    out.push_back(kept_attention(*dynamic_cast<TransformerEncoderLayer&>(*layer).attention,
                                 "TransformerEncoder::attentions"));
  return out;
}

}  // namespace anatomy::models
