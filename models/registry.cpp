// The built-in parts, one registration line each.
#include "models/registry.hpp"

#include "models/alibi.hpp"
#include "models/feed_forward.hpp"
#include "models/fused_multi_head_attention.hpp"
#include "models/multi_head_attention.hpp"
#include "models/relative_positions.hpp"
#include "models/rotary_positions.hpp"
#include "models/sinusoidal_positional_embedding.hpp"
#include "models/swiglu_feed_forward.hpp"

namespace anatomy::models {

Registry<PartFactory>& norms() {
  static Registry<PartFactory> registry = [] {
    Registry<PartFactory> r("norm_type");
    r.add("layer_norm", [](const TransformerConfig& c) {
      return std::make_shared<nn::LayerNorm>(Shape{c.hidden_size},
                                             static_cast<float>(c.layer_norm_eps), true, c.bias);
    });
    r.add("rms_norm", [](const TransformerConfig& c) {
      return std::make_shared<nn::RMSNorm>(c.hidden_size, static_cast<float>(c.layer_norm_eps));
    });
    return r;
  }();
  return registry;
}

Registry<PartFactory>& feed_forwards() {
  static Registry<PartFactory> registry = [] {
    Registry<PartFactory> r("ffn_type");
    r.add("feed_forward",
          [](const TransformerConfig& c) { return std::make_shared<FeedForward>(c); });
    r.add("swiglu",
          [](const TransformerConfig& c) { return std::make_shared<SwiGLUFeedForward>(c); });
    return r;
  }();
  return registry;
}

Registry<AttentionFactory>& attentions() {
  static Registry<AttentionFactory> registry = [] {
    Registry<AttentionFactory> r("attention_type");
    r.add("book", [](const TransformerConfig& c, std::shared_ptr<AttentionPositions> p) {
      if (p)
        throw Error(fmt::format(
            "attention_type \"book\": the book's per-head MultiHeadAttention takes no position "
            "scheme inside attention ('{}'); use attention_type \"fused\"",
            c.position_embedding_type));
      return std::shared_ptr<Attention>(std::make_shared<MultiHeadAttention>(c));
    });
    r.add("fused", [](const TransformerConfig& c, std::shared_ptr<AttentionPositions> p) {
      return std::shared_ptr<Attention>(std::make_shared<FusedMultiHeadAttention>(c, p));
    });
    return r;
  }();
  return registry;
}

Registry<PositionScheme>& positions() {
  static Registry<PositionScheme> registry = [] {
    Registry<PositionScheme> r("position_embedding_type");
    r.add("absolute", {.embedding = [](const TransformerConfig& c) {
            return std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size);
          }});
    r.add("sinusoidal",
          {.embedding =
               [](const TransformerConfig& c) {
                 return std::make_shared<SinusoidalPositionalEmbedding>(c.max_position_embeddings,
                                                                        c.hidden_size);
               },
           .check =
               [](const TransformerConfig& c) {
                 if (c.hidden_size % 2 != 0)
                   throw Error(
                       fmt::format("config: sinusoidal positions need an even hidden_size (got {})",
                                   c.hidden_size));
               }});
    // Schemes inside attention: the embeddings add no positions.
    for (const bool key_query : {false, true})
      r.add(key_query ? "relative_key_query" : "relative_key",
            {.attention = [key_query](const TransformerConfig& c) {
              return std::make_shared<RelativePositions>(c, key_query);
            }});
    r.add("alibi",
          {.attention = [](const TransformerConfig& c) { return std::make_shared<ALiBi>(c); }});
    r.add("rotary",
          {.attention =
               [](const TransformerConfig& c) { return std::make_shared<RotaryPositions>(c); },
           .check =
               [](const TransformerConfig& c) {
                 if (c.head_dim() % 2 != 0)
                   throw Error(
                       fmt::format("config: rotary positions need an even head size (hidden_size / "
                                   "num_attention_heads = {})",
                                   c.head_dim()));
               }});
    return r;
  }();
  return registry;
}

std::shared_ptr<nn::Module> make_norm(const TransformerConfig& c) {
  return norms().at(c.norm_type)(c);
}

std::shared_ptr<nn::Module> make_feed_forward(const TransformerConfig& c) {
  return feed_forwards().at(c.ffn_type)(c);
}

std::shared_ptr<Attention> make_attention(const TransformerConfig& c, bool self_attention) {
  const auto& scheme = positions().at(c.position_embedding_type);
  std::shared_ptr<AttentionPositions> p;
  if (self_attention && scheme.attention) p = scheme.attention(c);
  return attentions().at(c.attention_type)(c, p);
}

std::shared_ptr<nn::Module> make_position_embedding(const TransformerConfig& c) {
  const auto& scheme = positions().at(c.position_embedding_type);
  return scheme.embedding ? scheme.embedding(c) : nullptr;
}

}  // namespace anatomy::models
