#include "checkpoints/gpt2_checkpoint.hpp"

#include "checkpoints/layout_mismatch.hpp"

#include <fmt/format.h>

namespace anatomy::checkpoints {

namespace {

// A Linear's weight as GPT-2's Conv1D keeps it, [in, out], and its bias (zeros without one).
void conv1d(nn::StateDict& out, const std::string& to, const nn::StateDict& in,
            const std::string& from) {
  const Tensor& w = in.at(from + ".weight");
  out[to + ".weight"] = w.t().contiguous();
  out[to + ".bias"] = in.contains(from + ".bias") ? in.at(from + ".bias") : zeros({w.size(0)});
}

void layer_norm(nn::StateDict& out, const std::string& to, const nn::StateDict& in,
                const std::string& from) {
  const Tensor& w = in.at(from + ".weight");
  out[to + ".weight"] = w;
  out[to + ".bias"] = in.contains(from + ".bias") ? in.at(from + ".bias") : zeros(w.shape());
}

}  // namespace

std::string gpt2_mismatch(const models::TransformerConfig& c) {
  if (!c.pre_layer_norm) return describe_mismatch("pre_layer_norm", "false", "GPT-2", "true");
  if (!c.final_layer_norm) return describe_mismatch("final_layer_norm", "false", "GPT-2", "true");
  if (c.embedding_layer_norm)
    return describe_mismatch("embedding_layer_norm", "true", "GPT-2", "false");
  if (auto swapped = swapped_part_mismatch(c, "GPT-2"); !swapped.empty()) return swapped;
  if (c.type_vocab_size != 0)
    return describe_mismatch("type_vocab_size", std::to_string(c.type_vocab_size), "GPT-2", "0");
  return "";
}

nlohmann::json gpt2_config(const models::TransformerConfig& c) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", c.vocab_size},
          {"n_positions", c.max_position_embeddings},
          {"n_embd", c.hidden_size},
          {"n_layer", c.num_hidden_layers},
          {"n_head", c.num_attention_heads},
          {"n_inner", c.intermediate_size},
          {"activation_function", c.hidden_act},
          {"resid_pdrop", c.hidden_dropout_prob},
          {"embd_pdrop", c.hidden_dropout_prob},
          {"attn_pdrop", c.attention_probs_dropout_prob},
          {"layer_norm_epsilon", c.layer_norm_eps},
          {"initializer_range", c.initializer_range},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"pad_token_id", c.pad_token_id},
          // GPT-2's own 50256 is outside this vocabulary, and generation here stops at no token.
          {"bos_token_id", nullptr},
          {"eos_token_id", nullptr}};
}

nn::StateDict to_gpt2_checkpoint(const nn::StateDict& state, const models::TransformerConfig& c) {
  if (const auto field = gpt2_mismatch(c); !field.empty())
    throw Error(
        fmt::format("GPT-2 export: {}; GPT2LMHeadModel would compute something else", field));
  nn::StateDict out;
  out["transformer.wte.weight"] = state.at("decoder.embeddings.token_embeddings.weight");
  out["transformer.wpe.weight"] = state.at("decoder.embeddings.position_embeddings.weight");
  for (int64_t n = 0; n < c.num_hidden_layers; ++n) {
    const std::string from = fmt::format("decoder.layers.{}.", n);
    const std::string to = fmt::format("transformer.h.{}.", n);
    layer_norm(out, to + "ln_1", state, from + "layer_norm_1");
    conv1d(out, to + "attn.c_attn", state, from + "self_attention.qkv");
    conv1d(out, to + "attn.c_proj", state, from + "self_attention.output_linear");
    layer_norm(out, to + "ln_2", state, from + "layer_norm_2");
    conv1d(out, to + "mlp.c_fc", state, from + "feed_forward.linear_1");
    conv1d(out, to + "mlp.c_proj", state, from + "feed_forward.linear_2");
  }
  layer_norm(out, "transformer.ln_f", state, "decoder.layer_norm");
  if (state.contains("lm_head.bias"))
    throw Error("GPT-2 export: lm_head has a bias (GPT-2's has none)");
  if (!c.tie_word_embeddings) out["lm_head.weight"] = state.at("lm_head.weight");
  return out;
}

}  // namespace anatomy::checkpoints
