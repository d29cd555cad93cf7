// Attention: what an encoder or decoder layer needs of its attention part, whichever layout or
// variant fills it (the book's MultiHeadAttention, FusedMultiHeadAttention, or one registered
// by name: see registry.hpp).
#pragma once

#include "models/kv_cache.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class Attention : public nn::Module {
 public:
  // query_states [B, Tq, E], key_value_states [B, Tk, E] (the same tensor for self-attention,
  // the encoder's output for cross-attention); mask (0/1) broadcasts to [B, Tq, Tk].
  // -> [B, Tq, E]
  virtual Tensor forward(const Tensor& query_states, const Tensor& key_value_states,
                         const Tensor& mask) = 0;
  // Incremental decoding: for self-attention the new keys and values are appended to `cache`;
  // for cross-attention (`static_kv`) they are computed once and reused. Layouts without a
  // cache say so.
  virtual Tensor forward([[maybe_unused]] const Tensor& query_states,
                         [[maybe_unused]] const Tensor& key_value_states,
                         [[maybe_unused]] const Tensor& mask, [[maybe_unused]] KVCache& cache,
                         [[maybe_unused]] bool static_kv) {
    throw Error(
        fmt::format("{}: this attention layout has no KV cache; use attention_type \"fused\" for "
                    "incremental decoding",
                    type_name()));
  }
  // Whether the cached forward above works (decoding falls back to recomputing without one).
  virtual bool has_kv_cache() const { return false; }
  Tensor forward(const Tensor& hidden_state) override {
    return forward(hidden_state, hidden_state, Tensor());
  }

  // The queries and keys of the last forward, [B, H, Tq, D] and [B, H, Tk, D], after the position
  // scheme: the vectors whose scaled dot products became last_attention's scores (BertViz's
  // neuron view draws them). A layout that does not keep them returns undefined tensors.
  virtual std::pair<Tensor, Tensor> last_queries_keys() const { return {}; }

  // Hugging Face's output_attentions: whether forward keeps last_attention (and the queries and
  // keys) for pictures. Off by default, so that the fused layout never forms the [B, H, Tq, Tk]
  // weights; the book's layout computes them anyway and always keeps them.
  // set_output_attentions(model, true) turns it on for every attention of a model.
  bool output_attentions = false;
  Tensor last_attention;  // [B, H, Tq, Tk] of the last forward, for pictures
};

// Sets output_attentions on every Attention in `model`'s tree.
void set_output_attentions(nn::Module& model, bool on);
// attention.last_attention, or a clear error when the last forward kept none (`who` names the
// caller).
Tensor kept_attention(const Attention& attention, const std::string& who);

// Hidden states [B, T, E] for both inputs, with one batch size: checked by every layout.
void check_attention_inputs(const std::string& who, const Tensor& query_states,
                            const Tensor& key_value_states, int64_t E);

// A [B, Tq, Tk] (or [Tq, Tk]) mask made to broadcast over heads: [B, 1, Tq, Tk].
Tensor per_head(const Tensor& mask);

}  // namespace anatomy::models
