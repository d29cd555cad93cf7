// FeedForward (the book's position-wise feed-forward layer): linear_1 (hidden -> intermediate),
// GELU, linear_2 (intermediate -> hidden), dropout. Applied to every position independently.
#pragma once

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class FeedForward : public nn::Module {
 public:
  explicit FeedForward(const TransformerConfig& config);
  Tensor forward(const Tensor& x) override;  // [B, T, E] -> [B, T, E]

  std::shared_ptr<nn::Linear> linear_1, linear_2;
  std::shared_ptr<nn::Module> gelu;  // the config's hidden_act (GELU in the book)
  std::shared_ptr<nn::Dropout> dropout;
};

}  // namespace anatomy::models
