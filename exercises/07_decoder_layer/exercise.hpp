// Exercise 07: a pre-LN decoder layer with masked self-attention and encoder-decoder attention.
#pragma once

#include "models/models.hpp"

struct DecoderLayer : anatomy::nn::Module {
  explicit DecoderLayer(const anatomy::models::TransformerConfig& c) {
    using namespace anatomy;
    const auto eps = static_cast<float>(c.layer_norm_eps);
    for (auto* norm : {&layer_norm_1, &layer_norm_2, &layer_norm_3}) {
      const std::string name = norm == &layer_norm_1   ? "layer_norm_1"
                               : norm == &layer_norm_2 ? "layer_norm_2"
                                                       : "layer_norm_3";
      *norm = register_module(name, std::make_shared<nn::LayerNorm>(Shape{c.hidden_size}, eps));
    }
    self_attention =
        register_module("self_attention", std::make_shared<models::MultiHeadAttention>(c));
    cross_attention =
        register_module("cross_attention", std::make_shared<models::MultiHeadAttention>(c));
    feed_forward = register_module("feed_forward", std::make_shared<models::FeedForward>(c));
  }
  // x [B, T, E] (the target so far), memory [B, S, E] (the encoder's output), self_mask
  // broadcasting to [B, T, T] (the causal mask), memory_mask to [B, T, S] (source padding)
  // -> [B, T, E]
  anatomy::Tensor forward(const anatomy::Tensor& x, const anatomy::Tensor& memory,
                          const anatomy::Tensor& self_mask, const anatomy::Tensor& memory_mask);

  std::shared_ptr<anatomy::nn::LayerNorm> layer_norm_1, layer_norm_2, layer_norm_3;
  std::shared_ptr<anatomy::models::MultiHeadAttention> self_attention, cross_attention;
  std::shared_ptr<anatomy::models::FeedForward> feed_forward;
};
