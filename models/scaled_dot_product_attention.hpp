// scaled_dot_product_attention: the heart of the chapter.
//
//   weights = softmax(Q Kᵀ / √D + bias)  with masked positions set to -inf first
//   output  = weights V
//
// Shapes use the letters of models.hpp: B batch, H heads, Tq query and Tk key positions, D the
// size of one head's queries and keys.
#pragma once

#include "autograd/autograd.hpp"

namespace anatomy::models {

struct AttentionOutput {
  Tensor output;   // [..., Tq, Dv]
  Tensor weights;  // [..., Tq, Tk], rows sum to 1 (0 for a row whose every key is masked);
                   // undefined unless need_weights
};

struct AttentionOptions {
  // The book's 0/1 mask, broadcasting to [..., Tq, Tk]: where it is 0 the score becomes -inf
  // (mask == 0 rule), so that key gets no weight.
  Tensor mask;
  // An additive float bias broadcasting to [..., Tq, Tk], added to the scaled scores: PyTorch's
  // float attn_mask. Relative positions, ALiBi and T5's bias enter here; -inf entries hide keys.
  Tensor bias;
  float dropout_p = 0.0f;  // dropout on the weights, in training only
  bool training = false;
  // Whether the caller wants the weights back (nn.MultiheadAttention's need_weights). Without
  // them, query, key and value with the same batch dims go through the fused flash_attention,
  // which never forms the [..., Tq, Tk] weights: the same output and gradients, less memory and
  // fewer passes. AttentionOutput::weights is then undefined.
  bool need_weights = true;
};

// query [..., Tq, D], key [..., Tk, D], value [..., Tk, Dv]. A query whose every key is hidden
// (by the mask or by -inf in the bias) gets all-zero weights, not NaN.
AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const AttentionOptions& options);

// The book's form: only a 0/1 mask.
inline AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                                    const Tensor& value,
                                                    const Tensor& mask = Tensor(),
                                                    float dropout_p = 0.0f, bool training = false) {
  return scaled_dot_product_attention(query, key, value,
                                      AttentionOptions{mask, Tensor(), dropout_p, training});
}

}  // namespace anatomy::models
