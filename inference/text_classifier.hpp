// TextClassifier: a trained encoder with a classification head and its tokenizer, loaded from
// a run folder (anatomy train --task majority --out DIR), ready to classify texts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inference/pipeline.hpp"

namespace anatomy::training {

struct TextClassifier : Pipeline<models::TransformerForSequenceClassification> {
  static TextClassifier load(const std::string& dir);
  // Ids with the [BOS] token first (its hidden state is what the head reads: the [CLS] slot).
  std::vector<int64_t> encode(const std::string& text) const;
  // Padded ids [B, T] and the matching 0/1 attention mask [B, T].
  std::pair<Tensor, Tensor> batch(const std::vector<std::string>& texts) const;
  std::vector<int64_t> classify(const std::vector<std::string>& texts) const;
  // Percent of texts whose class is the label.
  double accuracy(const std::vector<std::string>& texts, const std::vector<int64_t>& labels) const;
};

}  // namespace anatomy::training
