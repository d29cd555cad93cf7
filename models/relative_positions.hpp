// Relative position representations (Shaw et al., 2018), as Hugging Face's BertSelfAttention
// implements them for position_embedding_type "relative_key" and "relative_key_query": the
// "additional terms that take the relative position between tokens into account" of the chapter.
//
// A learned vector per distance: distance_embedding [2 · max_position_embeddings - 1, D], row
// (i - j) + max_position_embeddings - 1 for query position i and key position j. Each score
// gains the query's dot product with it (relative_key), and also the key's (relative_key_query):
//   score(i, j) = (q_i · k_j + q_i · r_(i-j) [+ k_j · r_(i-j)]) / sqrt(D)
// added before the scaling, as in Hugging Face. The embeddings then add no absolute positions.
// Registered inside the attention module as "distance_embedding" holding "weight", so the
// parameter is e.g. encoder.layers.0.attention.distance_embedding.weight.
#pragma once

#include "models/attention_positions.hpp"
#include "models/config.hpp"

namespace anatomy::models {

class RelativePositions : public AttentionPositions {
 public:
  RelativePositions(const TransformerConfig& config, bool key_query);
  // [B, H, Tq, Tk]: the relative terms above, already divided by sqrt(D).
  Tensor bias(const Tensor& q, const Tensor& k, int64_t q_start) override;
  std::string name() const override { return "distance_embedding"; }
  std::string extra_repr() const override;

  // The relative terms' vectors for queries at q_start.. and keys at 0..: [Tq, Tk, D].
  Tensor distance_vectors(int64_t q_start, int64_t Tq, int64_t Tk) const;

  int64_t max_positions;
  bool key_query;  // relative_key_query: keys get the term too
  Tensor weight;   // [2 · max_positions - 1, D]
};

}  // namespace anatomy::models
