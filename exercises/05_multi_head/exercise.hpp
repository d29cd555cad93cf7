// Exercise 05: multi-head attention from heads (the book's MultiHeadAttention).
#pragma once

#include "models/models.hpp"

struct MultiHeadAttention : anatomy::nn::Module {
  // num_heads heads of size embed_dim / num_heads (the library's AttentionHead: its q, k, v
  // projections and scaled dot-product attention), then one output projection.
  MultiHeadAttention(int64_t embed_dim, int64_t num_heads) {
    heads = register_module("heads", std::make_shared<anatomy::nn::ModuleList>());
    for (int64_t h = 0; h < num_heads; ++h)
      heads->push_back(
          std::make_shared<anatomy::models::AttentionHead>(embed_dim, embed_dim / num_heads));
    output_linear = register_module("output_linear",
                                    std::make_shared<anatomy::nn::Linear>(embed_dim, embed_dim));
  }
  // query_states [B, Tq, E], key_value_states [B, Tk, E], mask broadcasting to [B, Tq, Tk]
  // -> [B, Tq, E]
  anatomy::Tensor forward(const anatomy::Tensor& query_states,
                          const anatomy::Tensor& key_value_states,
                          const anatomy::Tensor& mask = anatomy::Tensor());

  std::shared_ptr<anatomy::nn::ModuleList> heads;
  std::shared_ptr<anatomy::nn::Linear> output_linear;
};
