// Fine-tuning a pretrained BERT with the chapter's classification head (anatomy train --task
// classify --model-dir DIR --data FILE.tsv): the encoder starts from the folder's weights, the
// head from random ones, and both learn from lines "text<TAB>label" (--freeze-body: the head
// only). --random-weights builds the same model from random weights instead: the baseline that
// shows what pretraining is worth.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "checkpoints/checkpoints.hpp"
#include "io/input_file.hpp"
#include "kernels/parallel.hpp"
#include "run_folders/run_dir.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"
#include "training/classifier_hooks.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

namespace {

constexpr int64_t kBatchTexts = 16;  // texts a training step reads

struct Labelled {
  std::vector<std::string> texts, labels;
};

// Lines "text<TAB>label"; empty lines are skipped, anything else without a tab is an error.
Labelled read_labelled(const std::string& path) {
  std::ifstream f = open_input("train", path, "labelled data (text<TAB>label)");
  Labelled out;
  std::string line;
  for (int64_t number = 1; std::getline(f, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size())
      throw Error(fmt::format("train: {} line {}: expected text<TAB>label, got '{}'", path, number,
                              line.substr(0, 60)));
    out.texts.push_back(line.substr(0, tab));
    out.labels.push_back(line.substr(tab + 1));
  }
  if (out.texts.empty()) throw Error(fmt::format("train: {} holds no labelled lines", path));
  return out;
}

std::vector<int64_t> label_ids(const std::vector<std::string>& labels,
                               const std::vector<std::string>& names, const std::string& where) {
  std::vector<int64_t> ids;
  for (const auto& l : labels) {
    const auto it = std::find(names.begin(), names.end(), l);
    if (it == names.end())
      throw Error(fmt::format("train: {} has the label '{}', which the training data never gives",
                              where, l));
    ids.push_back(it - names.begin());
  }
  return ids;
}

// The labelled lines a run trains and validates on (held out: --valid FILE, else every fifth
// line), and the labels: their names, sorted, and each line's label as an index into them.
struct ClassifierData {
  Labelled train, valid;
  std::vector<std::string> names;
  std::vector<int64_t> train_ids, valid_ids;
};

ClassifierData read_classifier_data(const TrainOptions& o) {
  ClassifierData d;
  const Labelled all = read_labelled(o.data);
  if (!o.valid.empty()) {
    d.train = all;
    d.valid = read_labelled(o.valid);
  } else {
    for (size_t i = 0; i < all.texts.size(); ++i) {
      Labelled& part = i % 5 == 4 ? d.valid : d.train;
      part.texts.push_back(all.texts[i]);
      part.labels.push_back(all.labels[i]);
    }
  }
  if (o.limit > 0 && static_cast<int64_t>(d.train.texts.size()) > o.limit) {
    d.train.texts.resize(o.limit);
    d.train.labels.resize(o.limit);
  }
  d.names = d.train.labels;
  std::sort(d.names.begin(), d.names.end());
  d.names.erase(std::unique(d.names.begin(), d.names.end()), d.names.end());
  if (d.names.size() < 2 || d.valid.texts.empty())
    throw Error(fmt::format(
        "train: {} gives {} label(s) and {} held-out line(s); a classifier needs at least two "
        "labels and one held-out line",
        o.data, d.names.size(), d.valid.texts.size()));
  d.train_ids = label_ids(d.train.labels, d.names, o.data);
  d.valid_ids = label_ids(d.valid.labels, d.names, o.valid.empty() ? o.data : o.valid);
  return d;
}

// The pretrained encoder's config with a head of one output per label.
models::TransformerConfig classifier_config(const TrainOptions& o,
                                            const checkpoints::BertFolder& bert,
                                            const ClassifierData& d) {
  models::TransformerConfig config = bert.config;
  config.num_labels = static_cast<int64_t>(d.names.size());
  for (const auto& s : o.set) config.set(s);
  config.validate();
  return config;
}

// Training memory from the longest text as the model reads it, before the run folder exists.
void check_memory(const models::TransformerConfig& config, const ClassifierData& d,
                  const text::Tokenizer& tokenizer) {
  int64_t longest = 1;
  for (const auto& t : d.train.texts)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(tokenizer.encode(t).size()) + 2);
  longest = std::min(longest, config.max_position_embeddings);
  config.check_training_memory(
      kBatchTexts * longest, longest,
      fmt::format("the batch: {} texts, the longest of {} tokens", kBatchTexts, longest));
}

// Fine-tuning's usual rate (BERT's paper, Hugging Face's Trainer) is small, as the body already
// knows the language; a head trained alone starts from nothing and takes a larger one.
double fine_tune_lr(const TrainOptions& o) { return o.lr > 0 ? o.lr : o.freeze_body ? 1e-3 : 5e-5; }

// The classifier: the encoder from the folder's weights (or random ones), the head from random
// ones; returns the parameters it trains (--freeze-body: the head's only, the encoder and its
// pooler staying as loaded).
std::vector<Tensor> build_classifier(TextClassifier& classifier, const TrainOptions& o,
                                     const models::TransformerConfig& config,
                                     const checkpoints::BertFolder& bert) {
  manual_seed(o.seed);
  classifier.model = std::make_shared<models::TransformerForSequenceClassification>(config);
  auto& model = *classifier.model;
  models::init_weights(model, config.initializer_range);
  if (!o.random_weights) model.encoder->load_state_dict(bert.model->state_dict());
  if (!o.freeze_body) return model.parameters();
  for (auto& p : model.encoder->parameters()) p.requires_grad_(false);
  return model.classifier->parameters();
}

}  // namespace

int fine_tune_classifier(const TrainOptions& o) {
  if (o.model_dir.empty())
    throw Error("train: --task classify needs --model-dir DIR (a Hugging Face BERT folder)");
  if (o.data.empty())
    throw Error("train: --task classify needs --data FILE.tsv (lines: text<TAB>label)");
  if (o.resume) throw Error("train: a --task classify run does not resume; start it again");
  if (o.threads > 0) set_num_threads(o.threads);
  const ClassifierData d = read_classifier_data(o);
  const auto bert = checkpoints::load_bert_folder(o.model_dir);
  const models::TransformerConfig config = classifier_config(o, bert, d);
  TextClassifier classifier;
  classifier.tokenizer = text::load_folder_tokenizer(bert.dir);
  check_memory(config, d, *classifier.tokenizer);
  RunDir run{o.out};
  nlohmann::json meta = run.start(false, "classifier");
  RunLock lock = run.create();
  classifier.tokenizer->save(run.file("tokenizer"));
  write_file_atomically(run.file("config.json"),
                        config.to_json(models::TransformerConfig::Model::Classifier));
  const int64_t epochs = o.epochs > 0 ? o.epochs : 3;
  meta = {{"kind", "classifier"},
          {"task", "classify"},
          {"seed", o.seed},
          {"labels", d.names},
          {"model_dir", o.model_dir},
          {"pretrained", !o.random_weights},
          {"freeze_body", o.freeze_body},
          {"options", classifier_options(o, fine_tune_lr(o))},
          {"epochs", epochs}};
  const std::vector<Tensor> trained = build_classifier(classifier, o, config, bert);
  nn::AdamW opt(trained, {.lr = fine_tune_lr(o)});
  fmt::print(
      "task classify: {} ({} train, {} held out, labels: {}); {} {} layers, {} parameters "
      "trained\n",
      o.data, d.train.texts.size(), d.valid.texts.size(), fmt::join(d.names, ", "),
      o.random_weights ? "random-weight" : "pretrained", config.num_hidden_layers,
      std::accumulate(trained.begin(), trained.end(), int64_t{0},
                      [](int64_t n, const Tensor& p) { return n + p.numel(); }));
  fmt::print("  {}\n", config.architecture(true, false));
  Trainer trainer(*classifier.model, opt, nullptr,
                  classifier_trainer_options(o, epochs, "classify: loss"));
  trainer.run_info = meta;
  const LabelledTexts train_set{d.train.texts, d.train_ids}, valid_set{d.valid.texts, d.valid_ids};
  set_classifier_hooks(trainer, classifier, train_set, valid_set, o.seed, kBatchTexts);
  const TrainResult r = trainer.fit();
  fmt::print("saved {} (best held-out accuracy {:.1f}%)\n", o.out, r.best.value("accuracy", 0.0));
  return r.interrupted ? 130 : 0;
}

}  // namespace anatomy::training
