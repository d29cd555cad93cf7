// The key/value cache of incremental decoding: keys and values of the positions decoded so far,
// kept between steps so that each step feeds only the newest token.
#pragma once

#include <vector>

#include "autograd/autograd.hpp"

namespace anatomy::models {

// One attention module's keys and values, [B, H, T, D].
struct KVCache {
  Tensor key, value;
  int64_t length() const { return key.defined() ? key.size(2) : 0; }
};

// A whole decoder's: one KVCache per layer for self-attention and for cross-attention.
struct DecoderCache {
  std::vector<KVCache> self_attention, cross_attention;
  int64_t length = 0;  // positions decoded so far
};

}  // namespace anatomy::models
