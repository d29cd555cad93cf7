// AttentionPositions: a position scheme that acts inside attention instead of on the embeddings.
// Rotary embeddings rewrite queries and keys; ALiBi and relative positions add a bias to the
// scores. Each self-attention module holds one (made by the scheme registered under the
// config's position_embedding_type, see registry.hpp), so its parameters are named
// <attention>.<name()>.*, e.g. encoder.layers.0.attention.distance_embedding.weight.
//
// Positions: query i sits at position start + i (start > 0 with a KV cache, where the queries
// are the newest tokens), key j at position j.
#pragma once

#include "nn/nn.hpp"

namespace anatomy::models {

class AttentionPositions : public nn::Module {
 public:
  // Queries or keys [B, H, T, D] of positions start, start + 1, ...: rotated (rotary), or as
  // they are. Keys are encoded before they enter the KV cache.
  virtual Tensor encode(const Tensor& x, [[maybe_unused]] int64_t start) { return x; }
  // q [B, H, Tq, D] (positions q_start, ...), k [B, H, Tk, D] (positions 0, ...) -> a float bias
  // broadcasting to [B, H, Tq, Tk], added to the scaled scores; undefined for none.
  virtual Tensor bias([[maybe_unused]] const Tensor& q, [[maybe_unused]] const Tensor& k,
                      [[maybe_unused]] int64_t q_start) {
    return Tensor();
  }
  // The name it is registered under inside its attention module.
  virtual std::string name() const { return "positions"; }
};

}  // namespace anatomy::models
