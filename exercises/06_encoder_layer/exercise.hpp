// Exercise 06: the book's pre-LN encoder layer.
#pragma once

#include "models/models.hpp"

struct EncoderLayer : anatomy::nn::Module {
  // The parts, as the book names them: two LayerNorms, multi-head self-attention (the library's
  // book layout) and the position-wise feed-forward layer.
  explicit EncoderLayer(const anatomy::models::TransformerConfig& c) {
    using namespace anatomy;
    const auto eps = static_cast<float>(c.layer_norm_eps);
    layer_norm_1 =
        register_module("layer_norm_1", std::make_shared<nn::LayerNorm>(Shape{c.hidden_size}, eps));
    layer_norm_2 =
        register_module("layer_norm_2", std::make_shared<nn::LayerNorm>(Shape{c.hidden_size}, eps));
    attention = register_module("attention", std::make_shared<models::MultiHeadAttention>(c));
    feed_forward = register_module("feed_forward", std::make_shared<models::FeedForward>(c));
  }
  // x [B, T, E], mask broadcasting to [B, T, T] (1 = attend) -> [B, T, E]
  anatomy::Tensor forward(const anatomy::Tensor& x, const anatomy::Tensor& mask);

  std::shared_ptr<anatomy::nn::LayerNorm> layer_norm_1, layer_norm_2;
  std::shared_ptr<anatomy::models::MultiHeadAttention> attention;
  std::shared_ptr<anatomy::models::FeedForward> feed_forward;
};
