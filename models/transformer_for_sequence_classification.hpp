// TransformerForSequenceClassification (the book's): the encoder's hidden state of the first
// token ([CLS]) -> dropout -> classifier, giving num_labels logits. On a BERT encoder, which has
// a pooler, the pooler's output takes the [CLS] state's place, as in BertForSequenceClassification.
#pragma once

#include "models/transformer_encoder.hpp"

namespace anatomy::models {

class TransformerForSequenceClassification : public nn::Module {
 public:
  explicit TransformerForSequenceClassification(const TransformerConfig& config);
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask);  // -> [B, num_labels]
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor()); }

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<nn::Linear> classifier;
};

}  // namespace anatomy::models
