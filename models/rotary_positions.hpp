// Rotary position embeddings (RoPE; Su et al., 2021), as GPT-NeoX and LLaMA apply them: each
// query and key vector at position p is rotated, pair of dimensions (d, d + D/2) by the angle
// p · theta^(-2d/D). A rotation keeps lengths, and the dot product of a query rotated by p and a
// key rotated by p' depends only on p - p': attention sees relative positions, while nothing is
// added to the embeddings. position_embedding_type "rotary"; theta is the config's rope_theta.
#pragma once

#include "models/attention_positions.hpp"
#include "models/config.hpp"

namespace anatomy::models {

class RotaryPositions : public AttentionPositions {
 public:
  explicit RotaryPositions(const TransformerConfig& config);
  // x [B, H, T, D] at positions start.. -> x · cos + rotate_half(x) · sin, where
  // rotate_half([x1, x2]) = [-x2, x1] (the two halves of the last dimension).
  Tensor encode(const Tensor& x, int64_t start) override;
  std::string name() const override { return "rotary"; }
  std::string extra_repr() const override;

  int64_t head_dim;
  double theta;
  std::vector<double> inv_freq;  // theta^(-2d/D) for d < D/2: how fast each pair turns
};

}  // namespace anatomy::models
