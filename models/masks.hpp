// Attention masks: 1 where a query may look at a key, 0 where it may not (the book's
// convention: scores.masked_fill(mask == 0, -inf)). Masks broadcast against [B, Tq, Tk].
#pragma once

#include "autograd/autograd.hpp"

namespace anatomy::models {

// The decoder's causal mask: position i sees positions <= i. [Tq, Tk]; with a KV cache the
// queries are the last Tq of Tk positions, so row i sees keys <= Tk - Tq + i.
Tensor causal_mask(int64_t Tq, int64_t Tk = -1);

// Hides padding keys: [B, T] int64 ids -> [B, 1, T] (1 where the id is not pad_id).
Tensor padding_mask(const Tensor& ids, int64_t pad_id);

// Both masks at once (logical and); an undefined mask means "no mask".
Tensor combine_masks(const Tensor& a, const Tensor& b);

}  // namespace anatomy::models
