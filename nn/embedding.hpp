// Embedding: a lookup table of num_embeddings rows of size embedding_dim (torch.nn.Embedding).
#pragma once

#include <optional>

#include "nn/module.hpp"

namespace anatomy::nn {

class Embedding : public Module {
 public:
  // Rows start N(0, 1), as PyTorch's; the padding_idx row starts at zero and gets no gradient.
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& ids) override;  // int64 ids [...] -> [..., embedding_dim]
  std::string extra_repr() const override;
  // Shares `w` as this table (encoder and decoder using one vocabulary's embeddings).
  void tie_weight(const Tensor& w) {
    set_parameter("weight", w);
    weight = w;
  }

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;
};

}  // namespace anatomy::nn
