// TransformerEncoder (the book's): embeddings, then a stack of encoder layers. A loaded BERT
// also has a pooler (pooler->forward(hidden states) is Hugging Face's pooler_output).
// Shapes: models.hpp's letters (B batch, T positions, E hidden size, H heads).
#pragma once

#include "models/embeddings.hpp"
#include "models/pooler.hpp"
#include "models/transformer_encoder_layer.hpp"

namespace anatomy::models {

class TransformerEncoder : public nn::Module {
 public:
  explicit TransformerEncoder(const TransformerConfig& config);
  // int64 ids [B, T] -> hidden states [B, T, E]. attention_mask: [B, T] with 1 for real
  // tokens and 0 for padding (or any mask broadcasting to [B, T, T]). token_type_ids: [B, T],
  // for models with type_vocab_size > 0 (BERT's sentence A = 0, B = 1).
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask,
                 const Tensor& token_type_ids = Tensor());
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor()); }
  // Each layer's last attention weights, [B, H, T, T]: kept when output_attentions is set
  // (set_output_attentions(model, true) before the forward), an error otherwise.
  std::vector<Tensor> attentions() const;
  // Each layer's last queries and keys (Attention::last_queries_keys), for the neuron view.
  std::vector<std::pair<Tensor, Tensor>> queries_keys() const;

  std::shared_ptr<Embeddings> embeddings;
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<nn::Module> layer_norm;  // only with config.final_layer_norm
  std::shared_ptr<Pooler> pooler;          // only with config.add_pooling_layer (BERT's)
};

// A [B, T] 0/1 attention mask as a key mask [B, 1, T]; other masks pass through.
Tensor as_key_mask(const Tensor& attention_mask);

}  // namespace anatomy::models
