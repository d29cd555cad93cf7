// TransformerDecoder: embeddings, then a stack of decoder layers under the causal mask.
// With a DecoderCache it decodes incrementally: each call feeds only the new tokens, and the
// keys/values of earlier positions come from the cache.
#pragma once

#include "models/embeddings.hpp"
#include "models/transformer_decoder_layer.hpp"

namespace anatomy::models {

class TransformerDecoder : public nn::Module {
 public:
  // vocab_size: the decoder's own vocabulary (the target's in a translation model).
  TransformerDecoder(const TransformerConfig& config, int64_t vocab_size, bool cross_attention);
  // input_ids [B, T]; memory [B, S, E] and memory_mask (a key mask, e.g. [B, 1, S]) for
  // cross-attention; attention_mask [B, T_total] hides padded target keys. -> [B, T, E]
  Tensor forward(const Tensor& input_ids, const Tensor& memory, const Tensor& memory_mask,
                 const Tensor& attention_mask = Tensor(), DecoderCache* cache = nullptr);
  Tensor forward(const Tensor& input_ids) override {
    return forward(input_ids, Tensor(), Tensor());
  }
  // Whether every attention module can decode with a KV cache (the fused layout can).
  bool has_kv_cache() const;
  // Each layer's last attention weights, [B, H, Tq, Tk]: kept when output_attentions is set
  // (set_output_attentions(model, true) before the forward), an error otherwise.
  std::vector<Tensor> self_attentions() const;
  std::vector<Tensor> cross_attentions() const;
  // Each layer's last queries and keys (Attention::last_queries_keys), for the neuron view.
  std::vector<std::pair<Tensor, Tensor>> self_queries_keys() const;
  std::vector<std::pair<Tensor, Tensor>> cross_queries_keys() const;

  bool has_cross_attention;
  std::shared_ptr<Embeddings> embeddings;
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<nn::Module> layer_norm;  // only with config.final_layer_norm
};

}  // namespace anatomy::models
