// The options of a training run, as `anatomy train` takes them, and the kinds of run built on
// the Trainer: translation (a toy task or a TSV corpus), a character language model, an encoder
// with a classification head, and a pretrained BERT fine-tuned with one.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/random.hpp"
#include "autograd/tensor.hpp"
#include "models/config.hpp"

namespace anatomy::training {

struct TrainOptions {
  std::string task, corpus, text, out, preset;
  std::string valid, test;  // held-out TSV files of the user's own (instead of a cut of --corpus)
  bool reverse = false;     // translate the corpus's second column into its first
  std::string select;       // the best checkpoint by: bleu | loss | exact_match; empty: the data's
  // Average the last N evaluated models at the end (0, 1: no; -1: the run's default).
  int64_t average = -1;
  std::string config_file;       // a config.json for the model (instead of --preset)
  std::vector<std::string> set;  // config overrides, "hidden_size=256", applied last
  int64_t epochs = 0;      // 0: until the time budget if there is one, else the task's default
  int64_t iters = 0;       // language model: optimizer steps (0: the preset's)
  double time_budget = 0;  // seconds for the whole run, resumes included; 0: none
  uint64_t seed = 0;
  bool resume = false;
  double lr = 0;           // peak learning rate; 0: the preset's
  int64_t warmup = 0;      // 0: the preset's
  int64_t max_tokens = 0;  // tokens per batch; 0: the preset's
  std::string schedule;    // noam | linear | cosine; empty: the task's default
  double label_smoothing = 0.1;
  double clip = 1.0;
  int64_t vocab_size = 0;  // BPE vocabulary per side (or shared); 0: the task's default
  int64_t limit = 0;       // use only the first N training pairs (quick runs, tests)
  int64_t max_chars = 0;   // drop corpus pairs longer than this
  // One BPE vocabulary and token table for both sides: yes | no | auto (a corpus whose two sides
  // are written in one script).
  std::string shared_vocab = "auto";
  bool skip_malformed = false;
  bool early_stop = true;  // stop once validation exact match is 100%
  int threads = 0;  // 0: the thread count the program has (set_num_threads, else the default)
  bool detect_anomaly = false;  // name the op (and parameter) that first makes NaN or Inf
  int64_t log_every = 0;        // a log line every N steps within an epoch (0: none)
  // --task classify: a pretrained BERT folder fine-tuned on labelled lines "text<TAB>label".
  std::string model_dir, data;
  bool freeze_body = false;     // train the head alone
  bool random_weights = false;  // the folder's architecture from random weights (the baseline)
};

// The options that shape the optimization (learning rate, warmup, batch size, label smoothing,
// clipping, the training-pair limit, early stopping, model selection, the time budget), as
// run.json keeps them under "options": the values the run used, never 0 for "the preset's". A
// resumed run takes them from there, whatever its command line says, so that --resume continues
// exactly; only a new --time-budget (like a new --epochs) replaces the saved one.
nlohmann::json training_options(const TrainOptions& o);
// A classifier's: the same with the rate `lr` it uses, without warmup and tokens per batch (it
// has neither).
nlohmann::json classifier_options(const TrainOptions& o, double lr);
void restore_training_options(TrainOptions& o, const nlohmann::json& saved);

// The model's config: --config FILE or the named preset (`fallback` if none), then `layout`
// (what the kind of run needs when no file is given), then every --set. Not yet validated.
models::TransformerConfig build_config(
    const TrainOptions& o, const std::string& fallback_preset,
    const std::function<void(models::TransformerConfig&)>& layout);

// Each returns the process exit code: 0, or 130 when stopped by Ctrl-C / SIGTERM.
int train_translation(const TrainOptions& o);
int train_language_model(const TrainOptions& o);
int train_classifier(const TrainOptions& o);
int fine_tune_classifier(const TrainOptions& o);
// Any of the three, chosen by o.task / o.corpus, with the run's saved options on --resume.
int train(TrainOptions o);

// A language model's batch, as nanoGPT's get_batch draws it: `batch` windows of `T` ids, each
// from a start i drawn alike from 0 to ids.size() - T - 1, x = ids[i, i + T) and the targets
// y = ids[i + 1, i + T + 1), both [batch, T].
std::pair<Tensor, Tensor> sample_windows(const std::vector<int64_t>& ids, int64_t batch, int64_t T,
                                         Generator& g);

}  // namespace anatomy::training
