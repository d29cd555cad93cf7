// Training the encoder with a classification head on a toy task ("majority": which of a, b, c
// occurs most often in a sequence of symbols a..h), as the chapter's
// TransformerForSequenceClassification: the first token's hidden state -> classifier.
#include <fmt/format.h>

#include "data/data.hpp"
#include "kernels/parallel.hpp"
#include "run_folders/run_dir.hpp"
#include "training/classifier_hooks.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

namespace {
constexpr int64_t kBatchTexts = 32;  // texts a training step reads
}  // namespace

int train_classifier(const TrainOptions& o) {
  if (o.threads > 0) set_num_threads(o.threads);
  RunDir run{o.out};
  nlohmann::json meta = run.start(o.resume, "classifier");
  RunLock lock = o.resume ? run.lock() : RunLock();  // a new run locks when it creates the folder
  const uint64_t seed = o.resume ? run.field<uint64_t>(meta, "seed") : o.seed;
  auto all = data::majority_examples(12000, seed);
  std::vector<std::string> train_texts, valid_texts;
  std::vector<int64_t> train_labels, valid_labels;
  for (size_t i = 0; i < all.size(); ++i) {
    (i < 1000 ? valid_texts : train_texts).push_back(all[i].text);
    (i < 1000 ? valid_labels : train_labels).push_back(all[i].label);
  }
  if (o.limit > 0 && static_cast<int64_t>(train_texts.size()) > o.limit) {
    train_texts.resize(o.limit);
    train_labels.resize(o.limit);
  }
  TextClassifier classifier;
  models::TransformerConfig config;
  if (o.resume) {
    classifier.tokenizer = text::load_tokenizer(run.file("tokenizer"));
    config = run.read_config();
  } else {
    classifier.tokenizer =
        std::make_shared<text::WordTokenizer>(text::WordTokenizer::train(train_texts));
    config = build_config(o, "tiny", [](models::TransformerConfig& c) {
      c.intermediate_size = 128;
      c.max_position_embeddings = 32;
      c.final_layer_norm = true;
    });
    config.vocab_size = classifier.tokenizer->vocab().size();
    config.num_labels = 3;
    config.validate();
    config.check_training_memory(
        kBatchTexts * config.max_position_embeddings, config.max_position_embeddings,
        fmt::format("the batch: {} texts of up to max_position_embeddings tokens", kBatchTexts));
    lock = run.create();
    classifier.tokenizer->save(run.file("tokenizer"));
    write_file_atomically(run.file("config.json"),
                          config.to_json(models::TransformerConfig::Model::Classifier));
    meta = {{"kind", "classifier"},
            {"task", "majority"},
            {"seed", seed},
            {"options", classifier_options(o, o.lr > 0 ? o.lr : 1e-3)}};
  }
  manual_seed(seed);
  classifier.model = std::make_shared<models::TransformerForSequenceClassification>(config);
  auto& model = *classifier.model;
  models::init_weights(model, config.initializer_range);
  nn::AdamW opt(model.parameters(), {.lr = o.lr > 0 ? o.lr : 1e-3});
  const int64_t epochs = o.epochs > 0 ? o.epochs : o.resume ? meta.value("epochs", 5) : 5;
  meta["epochs"] = epochs;
  fmt::print(
      "task majority: which of a, b, c occurs most in a sequence of a..h ({} train, {} valid); {} "
      "parameters\n",
      train_texts.size(), valid_texts.size(), model.num_parameters());
  fmt::print("  {}\n", config.architecture(true, false));

  TrainerOptions options = classifier_trainer_options(o, epochs, "majority: loss");
  options.resume = o.resume;
  Trainer trainer(model, opt, nullptr, options);
  trainer.run_info = meta;
  const LabelledTexts train{train_texts, train_labels}, valid{valid_texts, valid_labels};
  set_classifier_hooks(trainer, classifier, train, valid, seed, kBatchTexts);
  const TrainResult r = trainer.fit();
  fmt::print("saved {} (best validation accuracy {:.1f}%)\n", o.out, r.best.value("accuracy", 0.0));
  return r.interrupted ? 130 : 0;
}

}  // namespace anatomy::training
