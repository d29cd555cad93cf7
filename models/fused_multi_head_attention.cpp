#include "models/fused_multi_head_attention.hpp"

#include "models/scaled_dot_product_attention.hpp"

namespace anatomy::models {

FusedMultiHeadAttention::FusedMultiHeadAttention(const TransformerConfig& config,
                                                 std::shared_ptr<AttentionPositions> p)
    : num_heads(config.num_attention_heads),
      head_dim(config.head_dim()),
      dropout_p(static_cast<float>(config.attention_probs_dropout_prob)) {
  const int64_t E = config.hidden_size;
  // Each head's q/k/v rows start as a Linear(E, D) would (bound 1/√E): already so, since
  // PyTorch's default bound depends only on in_features.
  qkv = register_module("qkv", std::make_shared<nn::Linear>(E, 3 * E, config.bias));
  output_linear = register_module("output_linear", std::make_shared<nn::Linear>(E, E, config.bias));
  if (p) positions = register_module(p->name(), p);
}

Tensor FusedMultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                        const Tensor& mask) {
  return attend(query_states, key_value_states, mask, nullptr, false);
}

Tensor FusedMultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                        const Tensor& mask, KVCache& cache, bool static_kv) {
  return attend(query_states, key_value_states, mask, &cache, static_kv);
}

Tensor FusedMultiHeadAttention::attend(const Tensor& query_states, const Tensor& key_value_states,
                                       const Tensor& mask, KVCache* cache, bool static_kv) {
  const int64_t H = num_heads, D = head_dim, E = H * D;
  check_attention_inputs("FusedMultiHeadAttention", query_states, key_value_states, E);
  const int64_t B = query_states.size(0), Tq = query_states.size(1);
  // With a self-attention cache the new queries (and keys) come after the cached positions.
  const int64_t start = cache && !static_kv ? cache->length() : 0;
  const bool reuse_kv = cache && static_kv && cache->key.defined();
  Tensor q, k, v;
  if (query_states.is_same(key_value_states) && !static_kv) {
    // One projection for all three: (B, T, E) -> (B, T, 3, H, D), then each (B, H, T, D). Picked
    // before the transpose, the three gradients are added into a buffer laid out as the
    // projection's output, which its view then passes on as it is; picked from a permuted
    // (3, B, H, T, D), the same values, the buffer was in that order and was copied back.
    Tensor qkv_all = qkv->forward(query_states).view({B, Tq, 3, H, D});
    q = qkv_all.select(2, 0).transpose(1, 2);
    k = qkv_all.select(2, 1).transpose(1, 2);
    v = qkv_all.select(2, 2).transpose(1, 2);
  } else {
    // Queries from one sequence, keys and values from another: the q rows, then the k/v rows.
    auto rows = [&](const Tensor& t, int64_t from, int64_t n) {
      return t.defined() ? t.narrow(0, from, n) : Tensor();  // bias-free layers have no bias
    };
    // (B, Tq, E) -> (B, H, Tq, D)
    q = linear(query_states, qkv->weight.narrow(0, 0, E), rows(qkv->bias, 0, E))
            .view({B, Tq, H, D})
            .transpose(1, 2);
    if (!reuse_kv) {
      const int64_t Tk = key_value_states.size(1);
      // (B, Tk, E) -> (B, Tk, 2, H, D), then each (B, H, Tk, D), as above
      Tensor kv =
          linear(key_value_states, qkv->weight.narrow(0, E, 2 * E), rows(qkv->bias, E, 2 * E))
              .view({B, Tk, 2, H, D});
      k = kv.select(2, 0).transpose(1, 2);
      v = kv.select(2, 1).transpose(1, 2);
    }
  }
  if (positions) {  // rotary and the like: queries and new keys at their positions
    q = positions->encode(q, start);
    if (k.defined()) k = positions->encode(k, start);
  }
  if (cache) {
    if (static_kv) {  // cross-attention: the encoder's keys and values, computed once
      if (!reuse_kv) cache->key = k.contiguous(), cache->value = v.contiguous();
    } else if (cache->key.defined()) {  // self-attention: append, (B, H, T_past + Tq, D)
      cache->key = cat({cache->key, k}, 2);
      cache->value = cat({cache->value, v}, 2);
    } else {
      cache->key = k.contiguous(), cache->value = v.contiguous();
    }
    k = cache->key;
    v = cache->value;
  }
  AttentionOptions options{per_head(mask), Tensor(), dropout_p, is_training()};
  if (positions) options.bias = positions->bias(q, k, start);  // ALiBi, relative: [.., Tq, Tk]
  // Without output_attentions the weights are never formed (flash_attention).
  options.need_weights = output_attentions;
  auto [out, weights] = scaled_dot_product_attention(q, k, v, options);
  last_attention = output_attentions ? weights.detach() : Tensor();
  last_q = output_attentions ? q.detach() : Tensor();
  last_k = output_attentions ? k.detach() : Tensor();
  // (B, H, Tq, D) -> (B, Tq, H, D) -> (B, Tq, E)
  return output_linear->forward(out.transpose(1, 2).reshape({B, Tq, E}));
}

}  // namespace anatomy::models
