// anatomy train: the options shared by the three kinds of training run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace anatomy::cli {

struct TrainOptions {
  std::string task, corpus, text, out, preset;
  int64_t epochs = 0;      // 0: the task's default
  int64_t iters = 0;       // language model: optimizer steps (0: the preset's)
  double time_budget = 0;  // seconds; 0: none
  uint64_t seed = 0;
  bool resume = false;
  double lr = 0;           // peak learning rate; 0: the preset's
  int64_t warmup = 0;      // 0: the preset's
  int64_t max_tokens = 0;  // tokens per batch; 0: the preset's
  std::string schedule;    // noam | linear | cosine; empty: the task's default
  double label_smoothing = 0.1;
  double clip = 1.0;
  int64_t vocab_size = 0;  // BPE vocabulary per side; 0: the task's default
  int64_t limit = 0;       // use only the first N training pairs (quick runs, tests)
  int64_t max_chars = 0;   // drop corpus pairs longer than this
  bool skip_malformed = false;
  bool early_stop = true;  // stop once validation exact match is 100%
  int threads = 0;
};

// The options that shape the optimization (learning rate, warmup, batch size, label smoothing,
// clipping, the training-pair limit), as run.json keeps them under "options". A resumed run takes
// them from there, whatever its command line says, so that --resume continues exactly.
nlohmann::json training_options(const TrainOptions& o);
void restore_training_options(TrainOptions& o, const nlohmann::json& saved);

int train_translation(const TrainOptions& o);
int train_language_model(const TrainOptions& o);
int train_classifier(const TrainOptions& o);

// Set by Ctrl-C during training: the loop saves a checkpoint and exits cleanly.
bool interrupted();
void install_interrupt_handler();

}  // namespace anatomy::cli
