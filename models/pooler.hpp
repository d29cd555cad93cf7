// Pooler (Hugging Face's BertPooler): the state of the first token ([CLS]) through a Linear
// layer and tanh, one vector per sequence. BERT was pre-trained to put what next-sentence
// prediction needs there. The book's classification head reads the [CLS] state directly; on an
// encoder with a pooler (config.add_pooling_layer: a loaded BERT) it reads the pooler's output,
// as Hugging Face's BertForSequenceClassification does.
#pragma once

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace anatomy::models {

class Pooler : public nn::Module {
 public:
  explicit Pooler(const TransformerConfig& config);
  Tensor forward(const Tensor& hidden_states) override;  // [B, T, E] -> [B, E]

  std::shared_ptr<nn::Linear> dense;
};

}  // namespace anatomy::models
