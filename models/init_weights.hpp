// init_weights: BERT's and GPT's initialization for models trained from scratch: every Linear
// and Embedding weight ~ N(0, std) (relative positions' distance_embedding too), Linear biases 0,
// LayerNorm and RMSNorm gains 1 and shifts 0. Other modules (a norm or part of your own) keep
// what their constructor gave them.
//
// The chapter's classes keep PyTorch's defaults (Embedding ~ N(0, 1)), which is right for
// following the book but wrong for training a model whose output layer shares the embedding
// table: with N(0, 1) rows of size E the first logits have a standard deviation of about √E,
// and the loss starts near 50 instead of log(V). The trainer calls this first.
#pragma once

#include "nn/nn.hpp"

namespace anatomy::models {

// With num_layers > 0, the projections that write into the residual stream (the attention's
// output_linear, the FeedForward's linear_2, SwiGLU's down_proj) get std / √(2·num_layers), as
// GPT-2: the sum over layers then keeps its scale. A tied weight is initialized once, by the first
// module that holds it.
void init_weights(nn::Module& module, double std = 0.02, int64_t num_layers = 0);

}  // namespace anatomy::models
