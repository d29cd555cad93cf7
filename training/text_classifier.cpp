#include "training/text_classifier.hpp"

#include <fmt/format.h>

#include <numeric>

#include <cmath>

#include "checkpoints/checkpoints.hpp"
#include "data/batching.hpp"
#include "training/run_dir.hpp"

namespace anatomy::training {

TextClassifier TextClassifier::load(const std::string& dir) {
  RunDir run{dir};
  run.read_run("classifier");
  TextClassifier c;
  c.tokenizer = text::load_tokenizer(run.file("tokenizer"));
  {
    nn::init::SkipInitGuard skip;  // every parameter is loaded below
    c.model = std::make_shared<models::TransformerForSequenceClassification>(run.read_config());
  }
  checkpoints::load_weights(*c.model, run.weights(), run.read_config());
  c.model->eval();
  return c;
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

void set_classifier_hooks(Trainer& trainer, const TextClassifier& classifier,
                          const LabelledTexts& train, const LabelledTexts& valid, uint64_t seed,
                          size_t batch_size) {
  auto order = std::make_shared<std::vector<size_t>>(train.texts.size());
  trainer.batches = [order, seed, batch_size](int64_t epoch) {  // a fresh shuffle each epoch
    Generator g(seed * 1000 + static_cast<uint64_t>(epoch));
    std::iota(order->begin(), order->end(), 0);
    for (size_t i = order->size(); i > 1; --i)
      std::swap((*order)[i - 1], (*order)[g.next_u32() % i]);
    return static_cast<int64_t>((order->size() + batch_size - 1) / batch_size);
  };
  trainer.loss = [order, &classifier, &train, batch_size](int64_t, int64_t b) {
    std::vector<std::string> texts;
    std::vector<int64_t> labels;
    for (size_t k = b * batch_size; k < std::min(order->size(), (b + 1) * batch_size); ++k) {
      texts.push_back(train.texts[(*order)[k]]);
      labels.push_back(train.labels[(*order)[k]]);
    }
    auto [ids, mask] = classifier.batch(texts);
    Tensor logits = classifier.model->forward(ids, mask);  // [B, num_labels]
    return BatchLoss{
        cross_entropy(logits, from_vector(labels, {static_cast<int64_t>(labels.size())})),
        static_cast<int64_t>(labels.size())};
  };
  trainer.evaluate = [&classifier, &valid](bool) {
    NoGradGuard no_grad;
    classifier.model->eval();
    double loss = 0;  // the mean over every held-out text, 64 at a time
    for (size_t start = 0; start < valid.texts.size(); start += 64) {
      const size_t end = std::min(valid.texts.size(), start + 64);
      const std::vector<std::string> texts(valid.texts.begin() + static_cast<int64_t>(start),
                                           valid.texts.begin() + static_cast<int64_t>(end));
      const std::vector<int64_t> labels(valid.labels.begin() + static_cast<int64_t>(start),
                                        valid.labels.begin() + static_cast<int64_t>(end));
      auto [ids, mask] = classifier.batch(texts);
      loss += cross_entropy(classifier.model->forward(ids, mask),
                            from_vector(labels, {static_cast<int64_t>(labels.size())}))
                  .item<double>() *
              static_cast<double>(end - start);
    }
    return Metrics{
        {"valid_loss", loss / static_cast<double>(std::max<size_t>(1, valid.texts.size()))},
        {"accuracy", classifier.accuracy(valid.texts, valid.labels)}};
  };
  trainer.better = [](const Metrics& a, const Metrics& b) {
    return a.value("accuracy", -INFINITY) > b.value("accuracy", -INFINITY);  // missing: worst
  };
}

}  // namespace anatomy::training
