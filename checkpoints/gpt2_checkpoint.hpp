// GPT-2 checkpoints from the book's decoder-only language model (TransformerForCausalLM): the same
// computation under Hugging Face's GPT2LMHeadModel names, so that `transformers` loads a run with
// from_pretrained. GPT-2's blocks are the book's pre-LN decoder layers; its Conv1D layers store
// each weight transposed ([in, out]), and its c_attn joins q, k and v as the fused layout does.
//
//   the book (TransformerForCausalLM)               GPT-2 (GPT2LMHeadModel)
//   decoder.embeddings.token_embeddings          -> transformer.wte
//   decoder.embeddings.position_embeddings       -> transformer.wpe
//   decoder.layers.N.layer_norm_1                -> transformer.h.N.ln_1
//   decoder.layers.N.self_attention.qkv          -> transformer.h.N.attn.c_attn   (transposed)
//   decoder.layers.N.self_attention.output_linear-> transformer.h.N.attn.c_proj   (transposed)
//   decoder.layers.N.layer_norm_2                -> transformer.h.N.ln_2
//   decoder.layers.N.feed_forward.linear_1       -> transformer.h.N.mlp.c_fc      (transposed)
//   decoder.layers.N.feed_forward.linear_2       -> transformer.h.N.mlp.c_proj    (transposed)
//   decoder.layer_norm                           -> transformer.ln_f
//   lm_head                                      -> lm_head (tied to wte when the run ties them)
//
// GPT-2 has a bias in every Linear and LayerNorm: a model without them gets zero ones.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::checkpoints {

// The first field of `config` whose value GPT-2 does not have, as "field is X (GPT-2: Y)";
// "" when GPT2LMHeadModel computes what the book's model with this config computes.
std::string gpt2_mismatch(const models::TransformerConfig& config);

// config.json for GPT2LMHeadModel.
nlohmann::json gpt2_config(const models::TransformerConfig& config);

// A TransformerForCausalLM's state_dict (fused attention layout) under GPT-2's names. Throws,
// naming the field, when gpt2_mismatch finds one.
nn::StateDict to_gpt2_checkpoint(const nn::StateDict& state,
                                 const models::TransformerConfig& config);

}  // namespace anatomy::checkpoints
