// ALiBi (Press et al., 2022, "Train Short, Test Long"): no position embeddings at all. Each head h
// adds -slope_h · |i - j| to the score of query i and key j, so attention fades with distance, at
// a rate that differs per head. Nothing is learned and nothing depends on a maximum length, which
// is why a model trained on short sequences still works on longer ones.
// position_embedding_type "alibi".
#pragma once

#include "models/attention_positions.hpp"
#include "models/config.hpp"

namespace anatomy::models {

class ALiBi : public AttentionPositions {
 public:
  explicit ALiBi(const TransformerConfig& config);
  // [1, H, Tq, Tk]: -slope_h · |q_start + i - j|
  Tensor bias(const Tensor& q, const Tensor& k, int64_t q_start) override;
  std::string name() const override { return "alibi"; }
  std::string extra_repr() const override;

  // The paper's slopes: for H a power of 2, 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise those of
  // the largest power of 2 below H, then every other slope of the next power of 2.
  static std::vector<float> head_slopes(int64_t num_heads);
  std::vector<float> slopes;
};

}  // namespace anatomy::models
