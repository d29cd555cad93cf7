#include "training/classifier_hooks.hpp"

#include <cmath>
#include <numeric>

namespace anatomy::training {

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

TrainerOptions classifier_trainer_options(const TrainOptions& o, int64_t epochs,
                                          const std::string& title) {
  return {.epochs = epochs,
          .time_budget = o.time_budget,
          .clip = o.clip,
          .log_every = o.log_every,
          .run_dir = o.out,
          .title = title,
          .detect_anomaly = o.detect_anomaly};
}

}  // namespace anatomy::training
