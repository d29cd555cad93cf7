// Training a character-level decoder-only language model on a text file with the Trainer,
// nanoGPT-style: random blocks of the first 90% of the text, validation loss on the last 10%.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "inference/text_generator.hpp"
#include "io/input_file.hpp"
#include "kernels/frozen_weights.hpp"
#include "kernels/parallel.hpp"
#include "run_folders/run_dir.hpp"
#include "tokenizers/unicode.hpp"
#include "training/train_options.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

namespace {

// The training side of a preset; the model side is TransformerConfig::preset, whose
// max_position_embeddings is the block size.
struct LmRecipe {
  std::string model_preset;
  int64_t block, batch, iters, warmup;
  double lr, min_lr, dropout;
};

// "nanogpt" is nanoGPT's shakespeare_char CPU recipe.
LmRecipe lm_recipe(const std::string& name) {
  if (name == "nanogpt" || name.empty()) return {"nanogpt", 64, 12, 2000, 100, 1e-3, 1e-4, 0.0};
  if (name == "tiny") return {"tiny", 32, 16, 500, 50, 2e-3, 2e-4, 0.0};
  if (name == "small") return {"gpt-small", 128, 16, 4000, 200, 1e-3, 1e-4, 0.1};
  throw Error(fmt::format("unknown preset '{}' for --task lm (nanogpt, tiny or small)", name));
}

std::string read_text(const std::string& path) {
  std::ifstream f = open_input("train", path, "the text");
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().empty()) throw Error(fmt::format("train: the text {} is empty", path));
  return ss.str();
}

// `model`: the TransformerForCausalLM or one of its replicas.
Tensor lm_loss(nn::Module& model, const Tensor& x, const Tensor& y) {
  Tensor logits = dynamic_cast<models::TransformerForCausalLM&>(model).forward(x);  // [B, T, V]
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
}

// The mean loss of `iters` fixed batches. With more than one thread, each thread evaluates
// every n-th batch with its own replica of the model (nn::DataParallel): a forward pass over one
// batch is too small to keep two cores busy, two at once are not.
double estimate_loss(nn::DataParallel& parallel, nn::Module& model, const std::vector<int64_t>& ids,
                     int64_t batch, int64_t T, int64_t iters) {
  model.eval();
  Generator g(1234);  // the same windows every time, and the training generator untouched
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int64_t i = 0; i < iters; ++i) batches.push_back(sample_windows(ids, batch, T, g));
  std::vector<double> losses(iters);
  // Anomaly checks (--detect-anomaly) see the ops of their own thread only: then one thread.
  const int64_t n = is_anomaly_enabled() ? 1 : parallel.parts(iters);
  parallel.run(n, [&](int64_t k, nn::Module& m) {
    NoGradGuard no_grad;        // on this thread: each part runs on its own
    FrozenWeightsGuard frozen;  // the batches only read the weights: each is packed once
    for (int64_t i = k; i < iters; i += n)
      losses[i] = lm_loss(m, batches[i].first, batches[i].second).item<double>();
  });
  double total = 0;
  for (double l : losses) total += l;  // in batch order, whichever thread computed each
  return total / static_cast<double>(iters);
}

}  // namespace

std::pair<Tensor, Tensor> sample_windows(const std::vector<int64_t>& ids, int64_t batch, int64_t T,
                                         Generator& g) {
  if (T < 1 || batch < 1 || static_cast<int64_t>(ids.size()) <= T)
    throw Error(fmt::format(
        "sample_windows: expected windows of T >= 1 ids, at least one, from more than T ids (got "
        "{} of {} from {})",
        batch, T, ids.size()));
  std::vector<int64_t> x, y;
  // Every start from 0 to ids.size() - T - 1: the last window's target ends at the last id.
  const auto span = static_cast<uint64_t>(ids.size() - T);
  for (int64_t b = 0; b < batch; ++b) {
    const auto i =
        static_cast<int64_t>((static_cast<uint64_t>(g.next_u32()) << 32 | g.next_u32()) % span);
    x.insert(x.end(), ids.begin() + i, ids.begin() + i + T);
    y.insert(y.end(), ids.begin() + i + 1, ids.begin() + i + T + 1);
  }
  return {from_vector(x, {batch, T}), from_vector(y, {batch, T})};
}

namespace {

// One language-model run, in the steps train_language_model takes: each reads what the ones
// before it made. A resumed run reads back its tokenizer, config and seed.
struct LanguageModelRun {
  const TrainOptions& o;
  RunDir run;
  nlohmann::json meta;  // run.json's own fields
  RunLock lock;
  std::string text;
  std::string preset_name;
  LmRecipe p;
  std::shared_ptr<text::Tokenizer> tok;
  models::TransformerConfig config;
  int64_t block = 0;  // the model's positions: a window's length
  std::vector<int64_t> ids, train_ids, val_ids;
  uint64_t seed = 0;
  std::shared_ptr<models::TransformerForCausalLM> model;
  int64_t iters = 0, warmup = 0, schedule_steps = 0;
  double lr = 0, min_lr = 0;
  std::unique_ptr<nn::AdamW> opt;
  std::unique_ptr<nn::WarmupDecaySchedule> schedule;

  explicit LanguageModelRun(const TrainOptions& options);
  void make_config();
  void split_text();
  void build_model();
  void describe();
  nlohmann::json recipe_json() const;
  TrainResult train();
  void print_sample();
};

LanguageModelRun::LanguageModelRun(const TrainOptions& options) : o(options), run{options.out} {
  meta = run.start(o.resume, "lm");
  lock = o.resume ? run.lock() : RunLock();  // a new run locks when it creates the folder
  text = read_text(o.text);                  // before creating anything in the run folder
  preset_name = o.resume           ? meta.value("preset", "nanogpt")
                : o.preset.empty() ? "nanogpt"
                                   : o.preset;
  p = lm_recipe(preset_name);
}

void LanguageModelRun::make_config() {
  if (o.resume) {
    tok = text::load_tokenizer(run.file("tokenizer"));
    config = run.read_config();
  } else {
    tok = std::make_unique<text::CharTokenizer>(text::CharTokenizer::train({text}));
    TrainOptions sized = o;
    sized.preset = o.config_file.empty() ? p.model_preset : "";
    config = build_config(sized, p.model_preset, [&](models::TransformerConfig& c) {
      c.max_position_embeddings = p.block;
      c.hidden_dropout_prob = c.attention_probs_dropout_prob = p.dropout;
      c.embedding_layer_norm = false;  // GPT's layout: no norm right after the embeddings
      c.final_layer_norm = true;
      c.bias = false;  // and nanoGPT's bias-free Linear and LayerNorm layers
      c.tie_word_embeddings = true;
    });
    config.vocab_size = tok->vocab().size();
    config.validate();
  }
  block = config.max_position_embeddings;
  config.check_training_memory(
      p.batch * block, block,
      fmt::format("the batch: {} windows of max_position_embeddings {}", p.batch, block));
}

// The first 90% of the text trains, the rest validates; a new run's folder is created once
// nothing before it can fail, so a run that cannot start leaves no folder.
void LanguageModelRun::split_text() {
  ids = tok->encode(text);
  const auto n_train = static_cast<int64_t>(ids.size() * 9 / 10);
  train_ids.assign(ids.begin(), ids.begin() + n_train);
  val_ids.assign(ids.begin() + n_train, ids.end());
  // Each side must hold a window and its next id: block + 1 ids (see sample_windows).
  if (static_cast<int64_t>(train_ids.size()) <= block ||
      static_cast<int64_t>(val_ids.size()) <= block)
    throw Error(fmt::format("train: {} is too short for blocks of {} characters", o.text, block));
  if (!o.resume) {
    lock = run.create();
    tok->save(run.file("tokenizer"));
    write_file_atomically(run.file("config.json"),
                          config.to_json(models::TransformerConfig::Model::CausalLM));
  }
}

void LanguageModelRun::build_model() {
  seed = o.resume ? run.field<uint64_t>(meta, "seed") : o.seed;
  manual_seed(seed);
  model = std::make_shared<models::TransformerForCausalLM>(config);
  models::init_weights(*model, config.initializer_range, config.num_hidden_layers);
  iters = o.iters > 0 ? o.iters : o.resume ? meta.value("iters", p.iters) : p.iters;
  lr = o.lr > 0 ? o.lr : p.lr;
  opt = std::make_unique<nn::AdamW>(
      model->parameters(),
      nn::AdamWOptions{.lr = lr, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1});
  opt->no_decay_for_vectors();  // biases and LayerNorm gains are not decayed (nanoGPT's rule)
  warmup = o.warmup > 0 ? o.warmup : p.warmup;
  // A warmup longer than the run (the preset's 100 steps in a run of --iters 50) warms up through
  // all of it, as the translation schedules and Hugging Face's do, rather than stopping the run.
  schedule_steps = std::max(warmup, iters);
  // The floor keeps the preset's ratio to the peak (nanoGPT's min_lr = learning_rate / 10).
  min_lr = lr * p.min_lr / p.lr;
  schedule = std::make_unique<nn::WarmupDecaySchedule>(
      *opt, lr, warmup, schedule_steps, nn::WarmupDecaySchedule::Decay::Cosine, min_lr);
}

// run.json's own fields, and the log's line on the model.
void LanguageModelRun::describe() {
  if (!o.resume) {
    TrainOptions used = o;  // the values the run uses, the preset's included
    used.lr = lr;
    used.warmup = warmup;
    used.max_tokens = p.batch * block;
    meta = {{"kind", "lm"},
            {"seed", seed},
            {"preset", preset_name},
            {"text", o.text},
            {"options", training_options(used)}};
  }
  meta["iters"] = iters;
  meta["recipe"] = recipe_json();
  fmt::print(
      "character language model on {} ({} characters, vocabulary {}): {} parameters, block {}, "
      "batch {}\n",
      o.text, ids.size(), tok->vocab().size(), model->num_parameters(), block, p.batch);
  fmt::print("  {}\n", config.architecture(false, true));
}

// Everything the loop does, spelled out for `anatomy export` (PyTorch continues it).
nlohmann::json LanguageModelRun::recipe_json() const {
  return {{"block", block},
          {"batch", p.batch},
          {"label_smoothing", 0.0},
          {"clip", o.clip},
          {"optimizer",
           {{"lr", lr},
            {"beta1", 0.9},
            {"beta2", 0.99},
            {"eps", 1e-8},
            {"weight_decay", 0.1},
            {"decay_vectors", false}}},
          {"schedule",
           {{"name", "cosine"},
            {"warmup", warmup},
            {"total_steps", schedule_steps},
            {"min_lr", min_lr}}}};
}

// One "epoch" of `iters` random batches, evaluated 8 times on the way.
TrainResult LanguageModelRun::train() {
  Trainer trainer(*model, *opt, schedule.get(),
                  {.epochs = 1,
                   .time_budget = o.time_budget,
                   .clip = o.clip,
                   .eval_every = std::max<int64_t>(iters / 8, 50),
                   .curve_every = 10,
                   .log_every = o.log_every,
                   .unit = "step",
                   .run_dir = o.out,
                   .resume = o.resume,
                   .title = "character language model: loss",
                   .detect_anomaly = o.detect_anomaly});
  trainer.run_info = meta;
  trainer.batches = [&](int64_t) { return iters; };
  trainer.batch = [&](int64_t, int64_t) {
    auto [x, y] = sample_windows(train_ids, p.batch, block, default_generator());
    return Batch{.input = x, .labels = y};
  };
  trainer.batch_loss = [](nn::Module& m, const Batch& b) {
    return BatchLoss{lm_loss(m, b.input, b.labels), b.input.numel()};
  };
  // Each thread trains on its own rows of the batch (nn::DataParallel).
  trainer.replicate = [&] { return std::make_shared<models::TransformerForCausalLM>(config); };
  // 50 fixed batches on the way, 200 at the end (the number docs/training.md reports).
  nn::DataParallel evaluators(*model, trainer.replicate);
  trainer.evaluate = [&](bool final) {
    return Metrics{{"valid_loss",
                    estimate_loss(evaluators, *model, val_ids, p.batch, block, final ? 200 : 50)}};
  };
  return trainer.fit();
}

// A sample from a line break, or from the text's first character when it has none (a prompt
// the vocabulary lacks would be [UNK], which the model never saw).
void LanguageModelRun::print_sample() {
  TextGenerator generator{tok, model};
  const std::string prompt =
      generator.tokenizer->vocab().contains("\n") ? "\n" : anatomy::text::utf8_chars(text).at(0);
  fmt::print("sample:\n{}\n", generator.generate(prompt, 200, {.temperature = 0.8f, .top_k = 40})
                                  .substr(prompt == "\n" ? 1 : 0));
}

}  // namespace

int train_language_model(const TrainOptions& o) {
  if (o.threads > 0) set_num_threads(o.threads);
  LanguageModelRun lm(o);
  lm.make_config();
  lm.split_text();
  lm.build_model();
  lm.describe();
  const TrainResult r = lm.train();
  if (r.interrupted) {
    fmt::print("resume with: anatomy train --task lm --text {} --out {} --resume\n", o.text, o.out);
    return 130;
  }
  lm.print_sample();
  fmt::print("saved {}; loss curve in {}\n", o.out, lm.run.file("loss.svg"));
  return 0;
}

}  // namespace anatomy::training
