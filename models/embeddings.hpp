// Embeddings (the book's): token embeddings plus position embeddings, then layer norm and
// dropout. Positions are learned (a second Embedding table, the book's and BERT's choice) or
// sinusoidal (the paper's fixed sin/cos pattern, no parameters).
#pragma once

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

// The paper's table: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same).
Tensor sinusoidal_positions(int64_t max_positions, int64_t dim);

class Embeddings : public nn::Module {
 public:
  explicit Embeddings(const TransformerConfig& config, int64_t vocab_size = -1);
  // int64 ids [B, T] -> [B, T, hidden]; positions start at `start` (incremental decoding).
  Tensor forward(const Tensor& input_ids, int64_t start);
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, 0); }

  int64_t vocab_size, max_positions;
  std::shared_ptr<nn::Embedding> token_embeddings;
  std::shared_ptr<nn::Embedding> position_embeddings;  // null with sinusoidal positions
  Tensor sinusoidal;                                   // [max_positions, hidden], not a parameter
  std::shared_ptr<nn::LayerNorm> layer_norm;  // null with config.embedding_layer_norm = false
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
