// Training the encoder with a classification head on a toy task ("majority": which of a, b, c
// occurs most often in a sequence of symbols a..h), as the chapter's
// TransformerForSequenceClassification: the first token's hidden state -> classifier.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "data/data.hpp"
#include "progress.hpp"
#include "run_dir.hpp"
#include "train.hpp"

namespace anatomy::cli {

// Accuracy of `model` on examples (exposed for the tutorial).
double classification_accuracy(models::TransformerForSequenceClassification& model,
                               const text::Tokenizer& tok,
                               const std::vector<std::pair<std::string, int64_t>>& examples);

double classification_accuracy(models::TransformerForSequenceClassification& model,
                               const text::Tokenizer& tok,
                               const std::vector<std::pair<std::string, int64_t>>& examples) {
  NoGradGuard no_grad;
  model.eval();
  int64_t right = 0;
  for (size_t start = 0; start < examples.size(); start += 128) {
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> labels;
    for (size_t i = start; i < std::min(examples.size(), start + 128); ++i) {
      auto ids = tok.encode(examples[i].first);
      ids.insert(ids.begin(), tok.vocab().id("[BOS]"));  // the [CLS] position
      rows.push_back(ids);
      labels.push_back(examples[i].second);
    }
    Tensor x = data::pad_batch(rows, 0);
    auto pred = argmax(model.forward(x, ne(x.to(kFloat32), full({}, 0.0f))), -1).to_int_vector();
    for (size_t k = 0; k < pred.size(); ++k) right += pred[k] == labels[k];
  }
  model.train();
  return 100.0 * static_cast<double>(right) /
         static_cast<double>(std::max<size_t>(1, examples.size()));
}

int train_classifier(const TrainOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  if (o.threads > 0) set_num_threads(o.threads);
  RunDir run{o.out};
  if (o.resume)
    throw Error(
        "train: --resume is for translation and lm runs; the majority task trains in seconds");
  if (std::filesystem::exists(run.file("run.json")))
    throw Error(fmt::format("{} already holds a training run; choose another --out", o.out));
  run.create();
  auto all = data::majority_examples(12000, o.seed);
  std::vector<std::pair<std::string, int64_t>> train, valid;
  for (size_t i = 0; i < all.size(); ++i)
    (i < 1000 ? valid : train).push_back({all[i].text, all[i].label});
  if (o.limit > 0 && static_cast<int64_t>(train.size()) > o.limit) train.resize(o.limit);
  std::vector<std::string> texts;
  for (const auto& e : train) texts.push_back(e.first);
  auto tok = text::WordTokenizer::train(texts);
  tok.save(run.file("tokenizer"));
  models::TransformerConfig c;
  c.vocab_size = tok.vocab().size();
  c.hidden_size = 64;
  c.num_attention_heads = 4;
  c.num_hidden_layers = 2;
  c.intermediate_size = 128;
  c.max_position_embeddings = 32;
  c.num_labels = 3;
  c.layer_norm_eps = 1e-5;
  c.final_layer_norm = true;
  write_file_atomically(run.file("config.json"), c.to_json());
  manual_seed(o.seed);
  models::TransformerForSequenceClassification model(c);
  models::init_weights(model, c.initializer_range);
  const double lr = o.lr > 0 ? o.lr : 1e-3;
  nn::AdamW opt(model.parameters(), {.lr = lr});
  const int64_t epochs = o.epochs > 0 ? o.epochs : 5;
  fmt::print(
      "task majority: which of a, b, c occurs most in a sequence of a..h ({} train, {} valid); {} "
      "parameters\n",
      train.size(), valid.size(), model.num_parameters());
  double best = -1;
  for (int64_t epoch = 0; epoch < epochs && !interrupted(); ++epoch) {
    Generator g(o.seed * 1000 + static_cast<uint64_t>(epoch));
    std::vector<size_t> order(train.size());
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[g.next_u32() % i]);
    ProgressBar bar(fmt::format("epoch {}/{}", epoch + 1, epochs),
                    static_cast<int64_t>((order.size() + 31) / 32));
    double loss_sum = 0;
    int64_t batches = 0;
    for (size_t start = 0; start < order.size(); start += 32) {
      std::vector<std::vector<int64_t>> rows;
      std::vector<int64_t> labels;
      for (size_t k = start; k < std::min(order.size(), start + 32); ++k) {
        auto ids = tok.encode(train[order[k]].first);
        ids.insert(ids.begin(), tok.vocab().id("[BOS]"));
        rows.push_back(ids);
        labels.push_back(train[order[k]].second);
      }
      Tensor x = data::pad_batch(rows, 0);
      Tensor loss = cross_entropy(model.forward(x, ne(x.to(kFloat32), full({}, 0.0f))),
                                  from_vector(labels, {static_cast<int64_t>(labels.size())}));
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      ++batches;
      bar.update(batches, fmt::format("loss {:.3f}", loss_sum / static_cast<double>(batches)));
    }
    const double acc = classification_accuracy(model, tok, valid);
    const bool is_best = acc > best;
    if (is_best) {
      best = acc;
      model.save(run.file("best/model.safetensors"));
    }
    model.save(run.file("last/model.safetensors"));
    bar.finish(fmt::format("epoch {}/{}  train loss {:.3f}  valid accuracy {:.1f}%{}", epoch + 1,
                           epochs, loss_sum / static_cast<double>(batches), acc,
                           is_best ? "  best" : ""));
  }
  run.write_run(
      {{"kind", "classifier"},
       {"task", "majority"},
       {"seed", o.seed},
       {"best_accuracy", best},
       {"seconds",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}});
  fmt::print("saved {} (best validation accuracy {:.1f}%)\n", o.out, best);
  return interrupted() ? 130 : 0;
}

}  // namespace anatomy::cli
