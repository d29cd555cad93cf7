#include "models/transformer_for_sequence_classification.hpp"

namespace anatomy::models {

TransformerForSequenceClassification::TransformerForSequenceClassification(
    const TransformerConfig& c) {
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(c));
  dropout = register_module(
      "dropout", std::make_shared<nn::Dropout>(static_cast<float>(c.hidden_dropout_prob)));
  classifier =
      register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, c.num_labels));
}

Tensor TransformerForSequenceClassification::forward(const Tensor& input_ids,
                                                     const Tensor& attention_mask) {
  Tensor hidden = encoder->forward(input_ids, attention_mask);
  // A BERT encoder has a pooler, tanh(dense(x[:, 0, :])): its output is what BERT's
  // classification heads read (Hugging Face's BertForSequenceClassification).
  Tensor first = encoder->pooler ? encoder->pooler->forward(hidden) : hidden.select(1, 0);
  return classifier->forward(dropout->forward(first));
}

}  // namespace anatomy::models
