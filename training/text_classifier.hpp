// TextClassifier: a trained encoder with a classification head and its tokenizer, loaded from
// a run folder (anatomy train --task majority --out DIR), ready to classify texts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

struct TextClassifier {
  std::shared_ptr<text::Tokenizer> tokenizer;
  std::shared_ptr<models::TransformerForSequenceClassification> model;

  static TextClassifier load(const std::string& dir);
  // Ids with the [BOS] token first (its hidden state is what the head reads: the [CLS] slot).
  std::vector<int64_t> encode(const std::string& text) const;
  // Padded ids [B, T] and the matching 0/1 attention mask [B, T].
  std::pair<Tensor, Tensor> batch(const std::vector<std::string>& texts) const;
  std::vector<int64_t> classify(const std::vector<std::string>& texts) const;
  // Percent of texts whose class is the label.
  double accuracy(const std::vector<std::string>& texts, const std::vector<int64_t>& labels) const;
};

// Labelled texts: texts[i] has the class labels[i].
struct LabelledTexts {
  std::vector<std::string> texts;
  std::vector<int64_t> labels;
};

// The Trainer's hooks for `classifier` (both kinds of classifier run use them): each epoch a
// fresh shuffle of `train` from `seed`, cut into batches of `batch_size` with a cross-entropy
// loss; each evaluation the validation loss and accuracy on `valid`, the most accurate being the
// best. `train` and `valid` must outlive trainer.fit().
void set_classifier_hooks(Trainer& trainer, const TextClassifier& classifier,
                          const LabelledTexts& train, const LabelledTexts& valid, uint64_t seed,
                          size_t batch_size);

}  // namespace anatomy::training
