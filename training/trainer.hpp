// Trainer: the one training loop. Every run (translation, language model, classifier, each
// tutorial's) is a configuration of it: what a batch's loss is, how many batches an epoch has,
// how to evaluate and which evaluation is best. The loop itself is the same everywhere:
//
//   for each epoch, for each batch:
//     step:       loss = loss(epoch, batch); zero_grad; backward; clip; optimizer.step;
//                 schedule.step
//     report:     the progress bar, and a log line every log_every steps
//     evaluate:   at the end of each epoch (and every eval_every steps): keep the best,
//     checkpoint: save, and print one line: the train loss (mean since the previous line),
//                 the metrics, tokens/s
//
// With a run folder it also writes best/ and last/ weights (and, with keep_last, the last N
// evaluated models as checkpoints/step_NNNNNNNN.safetensors), last/training.safetensors (model,
// optimizer, schedule, random generator, position) and run.json, so `resume` continues bit for
// bit; Ctrl-C and SIGTERM stop cleanly with everything saved, and a time budget stops in time.
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/nn.hpp"
#include "run_folders/loss_curve.hpp"
#include "run_folders/run_dir.hpp"

namespace anatomy::training {

using Clock = std::chrono::steady_clock;
// Seconds from `t` to now.
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

using Metrics = nlohmann::ordered_json;  // {"valid_loss": 1.23, "bleu": 4.5, ...}

struct BatchLoss {
  Tensor loss;         // a scalar, to minimize
  int64_t tokens = 1;  // its weight in the epoch's mean loss, and what tokens/s counts
  // The plain negative log-likelihood when `loss` is label-smoothed (fairseq's nll_loss), which
  // is what the validation loss measures; NaN when the loss is already it.
  double nll = std::numeric_limits<double>::quiet_NaN();
};

// One batch as a run gives it to the Trainer (Trainer::batch). Every tensor it holds has the
// batch along dim 0, so a data-parallel step gives each thread the same rows of each. A task
// fills what its model reads: a translation all three, a language model `input` and `labels`.
struct Batch {
  Tensor input;          // the model's input: (B, S) source ids, or a language model's (B, T)
  Tensor decoder_input;  // a seq2seq decoder's input, the target shifted right (B, T); or none
  Tensor labels;         // what the loss compares the output with: (B, T) target ids, or (B)
  // The rows every tensor it holds shares (dim 0); a batch without a row, or whose tensors
  // disagree, is refused with their shapes.
  int64_t rows() const;
  // Rows [begin, end) of each tensor it holds: one thread's part of a data-parallel step.
  Batch slice(int64_t begin, int64_t end) const;
};

struct TrainerOptions {
  int64_t epochs = 1;  // passes over the data; 0 with a time budget: until the budget
  // Seconds for the whole run (0: none), counted over every process of it (a resumed run has
  // what is left); the last evaluation fits in.
  double time_budget = 0;
  // Seconds a new run spent before fit() that its budget counts (planning it: measuring what
  // its model costs); run.json's `seconds` includes them.
  double seconds_before = 0;
  double clip = 1.0;            // clip the gradient norm to this (0: no clipping)
  int64_t eval_every = 0;       // also evaluate every N steps inside an epoch (0: only at its end)
  int64_t curve_every = 20;     // a loss-curve point is the mean over this many steps
  int64_t log_every = 0;        // also print a line every N steps (0: only at evaluations)
  std::string unit = "epoch";   // what a log line counts: "epoch" (e/E) or "step" (s/S)
  std::string run_dir;          // checkpoints, run.json and the loss curve; empty: none
  bool resume = false;          // continue the run in run_dir
  std::string title;            // the loss curve's title
  bool quiet = false;           // no progress bar or log lines
  bool detect_anomaly = false;  // check every op's output and gradient for NaN/Inf (slow)
  // Also keep the model of each of the last N evaluations in checkpoints/ (for averaging;
  // 0 or 1: none).
  int64_t keep_last = 0;
  std::string best_by;  // what `better` compares, for the log line: "validation BLEU"
};

struct TrainResult {
  int64_t step = 0;
  Metrics best;              // the best evaluation (empty if none ran)
  bool interrupted = false;  // stopped by Ctrl-C / SIGTERM (exit code 130 for a command)
  bool out_of_time = false;
};

class Trainer {
 public:
  Trainer(nn::Module& model, nn::Optimizer& optimizer, nn::LRScheduler* schedule,
          TrainerOptions options);

  // --- what a run plugs in ---
  // How many batches epoch `epoch` has; called once at the start of each epoch (it may build
  // and shuffle them). Required.
  std::function<int64_t(int64_t epoch)> batches;
  // The loss of one batch, the model in training mode. Required, unless batch and batch_loss are
  // set instead.
  std::function<BatchLoss(int64_t epoch, int64_t batch)> loss;
  // Or the same in two halves: the batch, and the loss that `model` gives (a part of) it, a mean
  // over its `tokens`.
  std::function<Batch(int64_t epoch, int64_t batch)> batch;
  std::function<BatchLoss(nn::Module& model, const Batch& batch)> batch_loss;
  // With those two, data parallelism (nn::DataParallel): a new model like the trained one. A step
  // then splits its batch's rows between the threads, and each computes its part's loss and
  // gradient with a replica of the model; the batch's loss and gradient are the parts' weighted
  // by their tokens, as one pass over the whole batch gives them (up to rounding). Optional.
  std::function<std::shared_ptr<nn::Module>()> replicate;
  // Validation metrics, with "valid_loss"; `final` is the last evaluation of the run. Optional.
  std::function<Metrics(bool final)> evaluate;
  // Whether `now` is better than `best` (default: lower valid_loss).
  std::function<bool(const Metrics& now, const Metrics& best)> better;
  // Stop after this evaluation (e.g. 100% validation accuracy). Optional.
  std::function<bool(const Metrics&)> should_stop;
  // run.json's own fields (kind, seed, data, options...): written with history, curve and best.
  nlohmann::json run_info = nlohmann::json::object();

  TrainResult fit();

  int64_t step() const { return step_; }

 private:
  struct Loop;               // one fit()'s state: its loss sums, data parallelism, and why it stops
  void check_setup() const;  // the hooks fit() needs and the options' ranges
  void start_run();          // a resumed run's restore, or a new run's folder and first save
  void restore();            // from run_dir's last checkpoint and run.json
  void train_epoch(Loop& loop);
  void train_step(Loop& loop);  // one optimization step on the next batch
  BatchLoss forward(Loop& loop);
  void backward(Loop& loop);
  void plan_schedule(const Loop& loop);  // a budget-long run's decay, from its pace
  void report_progress(Loop& loop);      // the progress bar, and a log line every log_every
  // Evaluates, keeps the best, checkpoints and prints the line; `complete`: at an epoch's end,
  // `final`: the run's last evaluation.
  void evaluate_and_checkpoint(Loop& loop, bool complete, bool final);
  Metrics run_evaluation(Loop& loop, bool final);
  void record_history(const Loop& loop, const Metrics& m, bool complete);
  void print_evaluation(const Loop& loop, const Metrics& m, bool complete, bool final,
                        bool is_best) const;
  // Writes the model (last/, best/, a kept checkpoint), the training state at the position
  // (epoch, batch) a resume starts from, run.json and the loss curve.
  void checkpoint(bool is_best, int64_t epoch, int64_t batch);
  void write_run_json() const;  // run_info plus history, curve, best and step

  nn::Module& model_;
  nn::Optimizer& optimizer_;
  nn::LRScheduler* schedule_;
  TrainerOptions o_;
  int64_t step_ = 0, epoch_ = 0, batch_ = 0;  // the position the next step starts from
  // The run's seconds before this process (up to the checkpoint it resumed from), and when this
  // process's fit() started: elapsed() is their sum, what the time budget counts.
  double seconds_before_ = 0;
  std::chrono::steady_clock::time_point started_;
  double elapsed() const;
  Metrics best_ = Metrics::object();
  nlohmann::json history_ = nlohmann::json::array();
  LossCurve curve_;
};

// What a resume reads back. The position comes from a training checkpoint's metadata, the rest
// from run.json (as RunDir::read_run returns it, checked); each refuses what it cannot use with
// an error naming the file.
struct Position {
  int64_t epoch = 0, batch = 0;  // the next step's place
};
Position read_position(const nn::Checkpoint& checkpoint, const std::string& path);
struct RunHistory {
  Metrics best = Metrics::object();  // empty: no evaluation yet
  nlohmann::json history = nlohmann::json::array();
  LossCurve curve;
};
RunHistory read_history(const nlohmann::json& run);
// The loss curve's point of one history entry: its step, validation loss and metrics.
EvalPoint eval_point(const nlohmann::json& history_entry);

// The models a run kept in checkpoints/ (TrainerOptions::keep_last), oldest first.
std::vector<std::string> kept_checkpoints(const RunDir& run);

// "  valid loss 1.2345  BLEU 23.45  exact 10.2%": metrics as a log line shows them.
std::string format_metrics(const Metrics& m);

// The progress bar's ETA in seconds: the batches left at the pace so far, and with a time budget
// (time_budget > 0) no more than the budget has left after `elapsed` seconds, never below 0.
double time_left(double seconds_per_batch, int64_t batches_left, double time_budget,
                 double elapsed);

// Installs the Ctrl-C / SIGTERM handler that interrupted() reads, for one scope (each fit(), or
// a command's work around several), and restores the old one after.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

// Set by Ctrl-C (SIGINT) or SIGTERM while a StopOnSignal scope is open (every Trainer::fit).
bool interrupted();

}  // namespace anatomy::training
