#include "models/multi_head_attention.hpp"

namespace anatomy::models {

namespace {

void check_states(const char* who, const Tensor& q, const Tensor& kv, int64_t E) {
  for (const Tensor* t : {&q, &kv})
    if (t->dim() != 3 || t->size(-1) != E)
      throw Error(fmt::format("{}: expected hidden states [batch, seq, {}], got {}", who, E,
                              t->shape().str()));
  if (q.size(0) != kv.size(0))
    throw Error(fmt::format("{}: query batch {} and key/value batch {} differ", who, q.size(0),
                            kv.size(0)));
}

// A [B, Tq, Tk] (or [Tq, Tk]) mask, made to broadcast over heads: [B, 1, Tq, Tk].
Tensor per_head(const Tensor& mask) {
  return mask.defined() && mask.dim() == 3 ? mask.unsqueeze(1) : mask;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(const TransformerConfig& config) {
  const int64_t E = config.hidden_size, H = config.num_attention_heads;
  heads = register_module("heads", std::make_shared<nn::ModuleList>());
  const auto p = static_cast<float>(config.attention_probs_dropout_prob);
  for (int64_t h = 0; h < H; ++h)
    heads->push_back(std::make_shared<AttentionHead>(E, E / H, p, config.bias));
  output_linear = register_module("output_linear", std::make_shared<nn::Linear>(E, E, config.bias));
}

Tensor MultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                   const Tensor& mask, KVCache* cache, bool) {
  if (cache)
    throw Error(
        "MultiHeadAttention: the book's per-head layout has no KV cache; use "
        "FusedMultiHeadAttention (config.fused_attention) for incremental decoding");
  check_states("MultiHeadAttention", query_states, key_value_states, output_linear->in_features);
  std::vector<Tensor> outs, weights;
  for (const auto& m : *heads) {
    auto& head = dynamic_cast<AttentionHead&>(*m);
    outs.push_back(head.forward(query_states, key_value_states, mask));
    weights.push_back(head.last_attention);
  }
  last_attention = stack(weights, 1);  // [B, H, Tq, Tk]
  return output_linear->forward(cat(outs, -1));
}

FusedMultiHeadAttention::FusedMultiHeadAttention(const TransformerConfig& config)
    : num_heads(config.num_attention_heads),
      head_dim(config.head_dim()),
      dropout_p(static_cast<float>(config.attention_probs_dropout_prob)) {
  const int64_t E = config.hidden_size;
  qkv = register_module("qkv", std::make_shared<nn::Linear>(E, 3 * E, config.bias));
  output_linear = register_module("output_linear", std::make_shared<nn::Linear>(E, E, config.bias));
  // Each head's q/k/v rows start as a Linear(E, E/H) would (bound 1/√E): already so, since the
  // default bound depends only on in_features.
}

Tensor FusedMultiHeadAttention::forward(const Tensor& query_states, const Tensor& key_value_states,
                                        const Tensor& mask, KVCache* cache, bool static_kv) {
  const int64_t E = num_heads * head_dim, H = num_heads, D = head_dim;
  check_states("FusedMultiHeadAttention", query_states, key_value_states, E);
  const int64_t B = query_states.size(0), Tq = query_states.size(1);
  Tensor q, k, v;
  const bool self = query_states.is_same(key_value_states);
  if (self && !static_kv) {
    // One projection for all three: (B, T, E) -> (B, T, 3, H, D) -> (3, B, H, T, D)
    Tensor qkv_all = qkv->forward(query_states).view({B, Tq, 3, H, D}).permute({2, 0, 3, 1, 4});
    q = qkv_all.select(0, 0);
    k = qkv_all.select(0, 1);
    v = qkv_all.select(0, 2);
  } else {
    // Queries from one sequence, keys and values from another: the q rows, then the k/v rows.
    auto rows = [&](const Tensor& t, int64_t from, int64_t n) {
      return t.defined() ? t.narrow(0, from, n) : Tensor();  // bias-free layers have no bias
    };
    q = linear(query_states, qkv->weight.narrow(0, 0, E), rows(qkv->bias, 0, E))
            .view({B, Tq, H, D})
            .transpose(1, 2);
    if (!(cache && static_kv && cache->key.defined())) {
      const int64_t Tk = key_value_states.size(1);
      Tensor kv =
          linear(key_value_states, qkv->weight.narrow(0, E, 2 * E), rows(qkv->bias, E, 2 * E))
              .view({B, Tk, 2, H, D})
              .permute({2, 0, 3, 1, 4});  // (2, B, H, Tk, D)
      k = kv.select(0, 0);
      v = kv.select(0, 1);
    }
  }
  if (cache) {
    if (static_kv) {
      if (!cache->key.defined()) {
        cache->key = k.contiguous();
        cache->value = v.contiguous();
      }
      k = cache->key;
      v = cache->value;
    } else {
      if (cache->key.defined()) {
        k = cat({cache->key, k}, 2);  // (B, H, T_past + Tq, D)
        v = cat({cache->value, v}, 2);
      }
      cache->key = k.contiguous();
      cache->value = v.contiguous();
    }
  }
  auto [out, weights] =
      scaled_dot_product_attention(q, k, v, per_head(mask), dropout_p, is_training());
  last_attention = weights.detach();
  // (B, H, Tq, D) -> (B, Tq, H, D) -> (B, Tq, E)
  return output_linear->forward(out.transpose(1, 2).reshape({B, Tq, E}));
}

std::shared_ptr<Attention> make_attention(const TransformerConfig& config) {
  if (config.fused_attention) return std::make_shared<FusedMultiHeadAttention>(config);
  return std::make_shared<MultiHeadAttention>(config);
}

}  // namespace anatomy::models
