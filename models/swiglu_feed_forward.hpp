// SwiGLUFeedForward (Shazeer, 2020; LLaMA's LlamaMLP): a gated feed-forward layer. Two
// projections of x, one through SiLU, multiplied elementwise, then projected back:
//   down_proj(silu(gate_proj(x)) * up_proj(x)),  silu(z) = z · sigmoid(z)
// The gate lets each inner unit scale the other branch by how much of the input it lets through.
// ffn_type "swiglu"; the inner size is intermediate_size (LLaMA picks about 8/3 of hidden_size
// to keep the parameter count of a 4x GELU layer).
#pragma once

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class SwiGLUFeedForward : public nn::Module {
 public:
  explicit SwiGLUFeedForward(const TransformerConfig& config);
  Tensor forward(const Tensor& x) override;  // [B, T, E] -> [B, T, E]

  std::shared_ptr<nn::Linear> gate_proj, up_proj, down_proj;  // LLaMA's names
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
