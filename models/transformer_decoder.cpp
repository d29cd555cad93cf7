#include "models/transformer_decoder.hpp"

#include "models/masks.hpp"
#include "models/registry.hpp"
#include "models/transformer_encoder.hpp"

namespace anatomy::models {

TransformerDecoder::TransformerDecoder(const TransformerConfig& c, int64_t vocab_size, bool cross)
    : has_cross_attention(cross) {
  c.validate();
  embeddings = register_module("embeddings", std::make_shared<Embeddings>(c, vocab_size));
  layers = register_module("layers", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.decoder_layers(); ++i)
    layers->push_back(std::make_shared<TransformerDecoderLayer>(c, cross));
  if (c.final_layer_norm) layer_norm = register_module("layer_norm", make_norm(c));
}

Tensor TransformerDecoder::forward(const Tensor& input_ids, const Tensor& memory,
                                   const Tensor& memory_mask, const Tensor& attention_mask,
                                   DecoderCache* cache) {
  if (has_cross_attention) {
    if (!memory.defined())
      throw Error("TransformerDecoder: cross-attention needs the encoder's output (memory)");
    if (input_ids.dim() == 2 && memory.dim() == 3 && memory.size(0) != input_ids.size(0))
      throw Error(fmt::format("TransformerDecoder: decoder batch {} and encoder batch {} differ",
                              input_ids.size(0), memory.size(0)));
  }
  const int64_t start = cache ? cache->length : 0;
  Tensor x = embeddings->forward(input_ids, start);
  const int64_t T = input_ids.size(1);
  // Causal (each position sees itself and earlier ones) and, if given, target padding.
  Tensor self_mask = combine_masks(causal_mask(T, start + T), as_key_mask(attention_mask));
  if (cache && cache->self_attention.empty()) {
    cache->self_attention.resize(layers->size());
    cache->cross_attention.resize(layers->size());
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    auto& layer = dynamic_cast<TransformerDecoderLayer&>(*(*layers)[i]);
    x = layer.forward(x, memory, self_mask, memory_mask,
                      cache ? &cache->self_attention[i] : nullptr,
                      cache ? &cache->cross_attention[i] : nullptr);
  }
  if (cache) cache->length += T;
  return layer_norm ? layer_norm->forward(x) : x;
}

bool TransformerDecoder::has_kv_cache() const {
  for (const auto& l : *layers) {
    auto& layer = dynamic_cast<TransformerDecoderLayer&>(*l);
    if (!layer.self_attention->has_kv_cache() ||
        (layer.cross_attention && !layer.cross_attention->has_kv_cache()))
      return false;
  }
  return true;
}

std::vector<std::pair<Tensor, Tensor>> TransformerDecoder::self_queries_keys() const {
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const auto& l : *layers)
    out.push_back(dynamic_cast<TransformerDecoderLayer&>(*l).self_attention->last_queries_keys());
  return out;
}

std::vector<std::pair<Tensor, Tensor>> TransformerDecoder::cross_queries_keys() const {
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const auto& l : *layers) {
    auto& layer = dynamic_cast<TransformerDecoderLayer&>(*l);
    if (layer.cross_attention) out.push_back(layer.cross_attention->last_queries_keys());
  }
  return out;
}

std::vector<Tensor> TransformerDecoder::self_attentions() const {
  std::vector<Tensor> out;
  for (const auto& l : *layers)
    out.push_back(kept_attention(*dynamic_cast<TransformerDecoderLayer&>(*l).self_attention,
                                 "TransformerDecoder::self_attentions"));
  return out;
}

std::vector<Tensor> TransformerDecoder::cross_attentions() const {
  std::vector<Tensor> out;
  for (const auto& l : *layers) {
    auto& layer = dynamic_cast<TransformerDecoderLayer&>(*l);
    if (layer.cross_attention)
      out.push_back(kept_attention(*layer.cross_attention, "TransformerDecoder::cross_attentions"));
  }
  return out;
}

}  // namespace anatomy::models
