// Attention weights in the book's per-head layout (heads.<h>.{q,k,v}.{weight,bias}) or the
// fused one (qkv.{weight,bias}: every head's q rows, then k rows, then v rows). A checkpoint in
// either layout loads into a model of either kind, and so does a Hugging Face BERT checkpoint.
#pragma once

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::checkpoints {

using models::TransformerConfig;

nn::StateDict to_fused_layout(const nn::StateDict& state, int64_t num_heads);
nn::StateDict to_book_layout(const nn::StateDict& state, int64_t num_heads);

// Loads tensors into `model`, converting the attention layout to the model's. Hugging Face
// BERT names (bert_checkpoint.hpp) are renamed first; their model must have BERT's
// architecture (bert_architecture), or this throws rather than compute something else.
nn::LoadResult load_state(nn::Module& model, nn::StateDict state, const TransformerConfig& config,
                          bool strict = true);
// Throws, naming the tensor and `source` (the file), when a floating tensor of `state` holds a
// NaN or an infinity: such weights compute garbage, and a command that loaded them would print
// it with exit code 0. allow_nonfinite(true) (the commands' --allow-nonfinite) lets them through,
// for whoever really wants to look at such a checkpoint.
void check_finite(const nn::StateDict& state, const std::string& source);
void allow_nonfinite(bool allow);

// load_state from a safetensors file, its values checked by check_finite first.
nn::LoadResult load_weights(nn::Module& model, const std::string& path,
                            const TransformerConfig& config, bool strict = true);

}  // namespace anatomy::checkpoints
