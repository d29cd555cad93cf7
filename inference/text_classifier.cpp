#include "inference/text_classifier.hpp"

#include <fmt/format.h>

#include <cmath>

#include "data/batching.hpp"

namespace anatomy::training {

TextClassifier TextClassifier::load(const std::string& dir) {
  return {load_pipeline<models::TransformerForSequenceClassification>(dir, "classifier")};
}

std::vector<int64_t> TextClassifier::encode(const std::string& text) const {
  // A BERT reads [CLS] text [SEP], cut to its positions as Hugging Face's truncation=True cuts.
  if (tokenizer->kind() == "bert" || tokenizer->kind() == "hugging_face")
    return tokenizer->encode_plus(text, std::nullopt, model->encoder->embeddings->max_positions)
        .input_ids;
  auto ids = tokenizer->encode(text);
  ids.insert(ids.begin(), tokenizer->vocab().id("[BOS]"));
  return ids;
}

std::pair<Tensor, Tensor> TextClassifier::batch(const std::vector<std::string>& texts) const {
  std::vector<std::vector<int64_t>> rows;
  for (const auto& t : texts) rows.push_back(encode(t));
  Tensor ids = data::pad_batch(rows, 0);
  return {ids, ne(ids.to(kFloat32), full({}, 0.0f))};  // 1 for tokens, 0 for padding
}

std::vector<int64_t> TextClassifier::classify(const std::vector<std::string>& texts) const {
  NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  std::vector<int64_t> out;
  for (size_t start = 0; start < texts.size(); start += 128) {
    const std::vector<std::string> part(
        texts.begin() + static_cast<int64_t>(start),
        texts.begin() + static_cast<int64_t>(std::min(texts.size(), start + 128)));
    auto [ids, mask] = batch(part);
    for (int64_t p : argmax(model->forward(ids, mask), -1).to_int_vector()) out.push_back(p);
  }
  model->train(was_training);
  return out;
}

double TextClassifier::accuracy(const std::vector<std::string>& texts,
                                const std::vector<int64_t>& labels) const {
  const auto predicted = classify(texts);
  int64_t right = 0;
  for (size_t i = 0; i < predicted.size(); ++i) right += predicted[i] == labels[i];
  return 100.0 * static_cast<double>(right) /
         static_cast<double>(std::max<size_t>(1, texts.size()));
}

}  // namespace anatomy::training
