// SinusoidalPositionalEmbedding: the paper's fixed positions, no parameters.
//   PE[pos, 2i] = sin(pos / 10000^(2i/E)),  PE[pos, 2i+1] = cos(same)
// Like a position Embedding, it maps position ids [1, T] to [1, T, E].
#pragma once

#include "nn/nn.hpp"

namespace anatomy::models {

// The table [max_positions, dim].
Tensor sinusoidal_positions(int64_t max_positions, int64_t dim);

class SinusoidalPositionalEmbedding : public nn::Module {
 public:
  SinusoidalPositionalEmbedding(int64_t max_positions, int64_t dim);
  Tensor forward(const Tensor& position_ids) override;  // int64 [..] -> [.., dim]
  std::string extra_repr() const override;

  // Not a parameter, and not in the state dict: it is computed, never learned or loaded.
  Tensor table;
};

}  // namespace anatomy::models
