// Embeddings (the book's): token embeddings plus position embeddings, then layer norm and
// dropout. How positions enter is the config's position_embedding_type (registry.hpp): learned
// (a second Embedding table, the book's and BERT's choice), sinusoidal (the paper's fixed
// pattern), or none here when the scheme acts inside attention (rotary, ALiBi, relative).
// With type_vocab_size > 0 (BERT's 2), a third table adds each token's type: which sentence of
// a pair it belongs to (token_type_ids, all 0 when not given, as in Hugging Face).
#pragma once

#include "models/config.hpp"
#include "models/sinusoidal_positional_embedding.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class Embeddings : public nn::Module {
 public:
  // vocab_size: the rows of the token table; 0 or less takes the config's vocab_size.
  explicit Embeddings(const TransformerConfig& config, int64_t vocab_size = -1);
  // int64 ids [B, T] -> [B, T, E]; positions start at `start` (incremental decoding);
  // token_type_ids [B, T] (undefined: all 0) need a token_type_embeddings table.
  Tensor forward(const Tensor& input_ids, int64_t start, const Tensor& token_type_ids = Tensor());
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, 0); }

  int64_t vocab_size, max_positions;
  std::shared_ptr<nn::Embedding> token_embeddings;
  std::shared_ptr<nn::Module> position_embeddings;  // position ids [1, T] -> [1, T, E]; or null
  std::shared_ptr<nn::Embedding> token_type_embeddings;  // only with type_vocab_size > 0
  std::shared_ptr<nn::Module> layer_norm;                // the config's norm_type; null without
                                                         // embedding_layer_norm
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
