// scaled_dot_product_attention: the heart of the chapter.
//
//   weights = softmax(Q Kᵀ / √d_k)  with masked positions set to -inf first
//   output  = weights V
//
// Dimension letters: B batch, H heads, Tq query positions, Tk key positions, D head size.
#pragma once

#include "autograd/autograd.hpp"

namespace anatomy::models {

struct AttentionOutput {
  Tensor output;   // [..., Tq, Dv]
  Tensor weights;  // [..., Tq, Tk], rows sum to 1 (0 for a row whose every key is masked)
};

// query [..., Tq, D], key [..., Tk, D], value [..., Tk, Dv]. `mask` (optional) broadcasts to
// [..., Tq, Tk]; where it is 0 the score becomes -inf (the book's mask == 0 rule), so that key
// gets no weight. A query whose every key is masked gets all-zero weights, not NaN.
AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& mask = Tensor(),
                                             float dropout_p = 0.0f, bool training = false);

}  // namespace anatomy::models
