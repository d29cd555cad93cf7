// A learned relative-position bias (as T5's, with the distance clipped instead of bucketed):
// one learned number per head and per distance i - j in [-8, 8], added to the score of query i
// and key j; farther distances share the value of ±8. No position embeddings at all. It acts
// inside attention, so it is an AttentionPositions.
#pragma once

#include <algorithm>
#include <models/models.hpp>

class LearnedBias : public anatomy::models::AttentionPositions {
 public:
  static constexpr int64_t kMaxDistance = 8;

  explicit LearnedBias(const anatomy::models::TransformerConfig& config) {
    // [distance, head]: row (clipped i - j) + kMaxDistance.
    weight = register_parameter(
        "weight", 0.02f * anatomy::randn({2 * kMaxDistance + 1, config.num_attention_heads}));
  }

  // The bias [1, H, Tq, Tk]; query i sits at position q_start + i (a KV cache holds the rest).
  anatomy::Tensor bias(const anatomy::Tensor& q, const anatomy::Tensor& k,
                       int64_t q_start) override {
    const int64_t Tq = q.size(2), Tk = k.size(2);
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j)
        rows.push_back(std::clamp(q_start + i - j, -kMaxDistance, kMaxDistance) + kMaxDistance);
    // A lookup, so the gradient reaches the table: [Tq, Tk, H] -> [1, H, Tq, Tk]
    return anatomy::embedding(anatomy::from_vector(rows, {Tq, Tk}), weight)
        .permute({2, 0, 1})
        .unsqueeze(0);
  }
  std::string name() const override { return "learned_bias"; }

  anatomy::Tensor weight;
};

// The one registration line: `"position_embedding_type": "learned_bias"` now builds it.
inline const bool learned_bias_registered = anatomy::models::positions().add(
    "learned_bias",
    {.attention = [](const auto& config) { return std::make_shared<LearnedBias>(config); }});
