// init_weights: BERT's and GPT's initialization for models trained from scratch: every Linear
// and Embedding weight ~ N(0, initializer_range), biases 0, LayerNorm 1 and 0.
//
// The chapter's classes keep PyTorch's defaults (Embedding ~ N(0, 1)), which is right for
// following the book but wrong for training a model whose output layer shares the embedding
// table: with N(0, 1) rows of size d the first logits have a standard deviation of about √d,
// and the loss starts near 50 instead of log(vocab). The trainer calls this first.
#pragma once

#include "nn/nn.hpp"

namespace anatomy::models {

// With num_layers > 0, the projections that write into the residual stream (output_linear,
// linear_2) get std / √(2·num_layers), as GPT-2: the sum over layers then keeps its scale.
void init_weights(nn::Module& module, double std = 0.02, int64_t num_layers = 0);

}  // namespace anatomy::models
