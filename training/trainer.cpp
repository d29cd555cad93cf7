#include "training/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>

#include "checkpoints/checkpoints.hpp"
#include "kernels/parallel.hpp"
#include "run_folders/progress_bar.hpp"

namespace anatomy::training {

namespace {

std::atomic<bool> stop_requested{false};
void on_signal(int) { stop_requested = true; }

}  // namespace

// The outermost scope starts with no stop requested; a nested one (a fit() inside a command's
// own scope) keeps a stop already requested, so a Ctrl-C between two fits is not forgotten.
StopOnSignal::StopOnSignal() {
  old_int_ = std::signal(SIGINT, on_signal);
  old_term_ = std::signal(SIGTERM, on_signal);
  if (old_int_ != on_signal) stop_requested = false;
}

StopOnSignal::~StopOnSignal() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

bool interrupted() { return stop_requested; }

Position read_position(const nn::Checkpoint& ck, const std::string& path) {
  // Language-model checkpoints from before the Trainer hold only the step: one epoch of
  // `iters` batches, so the step is the batch.
  if (!ck.metadata.count("epoch") && !ck.metadata.count("batch")) return {0, ck.step};
  auto read = [&](const std::string& key) {
    auto it = ck.metadata.find(key);
    int64_t v = -1;
    size_t used = 0;
    try {
      if (it != ck.metadata.end()) v = std::stoll(it->second, &used);
    } catch (const std::exception&) {  // not a number, or out of int64's range
    }
    if (v < 0 || it == ck.metadata.end() || used != it->second.size())
      throw Error(fmt::format("{}: the training state's '{}' must be an integer >= 0 (got '{}')",
                              path, key, it == ck.metadata.end() ? "nothing" : it->second));
    return v;
  };
  return {read("epoch"), read("batch")};
}

RunHistory read_history(const nlohmann::json& run) {
  // read_run() checked every type and range; what is missing is an empty history.
  RunHistory h;
  if (run.contains("best") && run["best"].is_object()) h.best = run["best"];
  if (run.contains("history")) h.history = run["history"];
  for (const auto& c : run.value("curve", nlohmann::json::array()))
    h.curve.train.push_back({c[0].get<int64_t>(), c[1].get<double>(), c[2].get<double>()});
  for (const auto& e : h.history) h.curve.eval.push_back(eval_point(e));
  return h;
}

EvalPoint eval_point(const nlohmann::json& entry) {
  // A history entry's own fields, beside the evaluation's metrics.
  static const std::vector<std::string> not_metrics{
      "step", "epoch", "train_loss", "train_nll", "complete", "seconds", "valid_loss"};
  EvalPoint p{entry.value("step", int64_t{0}), entry.value("valid_loss", double{NAN}), {}};
  for (const auto& [k, v] : entry.items())
    if (v.is_number() && std::find(not_metrics.begin(), not_metrics.end(), k) == not_metrics.end())
      p.metrics.emplace_back(k, v.get<double>());
  return p;
}

Trainer::Trainer(nn::Module& model, nn::Optimizer& optimizer, nn::LRScheduler* schedule,
                 TrainerOptions options)
    : model_(model), optimizer_(optimizer), schedule_(schedule), o_(std::move(options)) {
  better = [](const Metrics& now, const Metrics& best) {
    return now.value("valid_loss", INFINITY) < best.value("valid_loss", INFINITY);
  };
}

void Trainer::restore() {
  RunDir run{o_.run_dir};
  const std::string path = run.file("last/training.safetensors");
  if (!std::filesystem::exists(path)) {
    // Stopped before its first checkpoint: the model is as the run's seed made it, so the run
    // starts again from the beginning.
    if (!o_.quiet)
      fmt::print("{} has no checkpoint yet: starting from the beginning\n", o_.run_dir);
    return;
  }
  const auto ck = nn::load_checkpoint(path, model_, optimizer_, schedule_);
  checkpoints::check_finite(model_.state_dict(), path);
  step_ = ck.step;
  const auto at = read_position(ck, path);
  epoch_ = at.epoch, batch_ = at.batch;
  const nlohmann::json run_json = run.read_run();
  seconds_before_ = run_json.value("seconds", 0.0);
  auto saved = read_history(run_json);
  best_ = std::move(saved.best);
  history_ = std::move(saved.history);
  curve_ = std::move(saved.curve);
  if (!o_.quiet && o_.unit == "epoch")
    fmt::print("resuming {} at epoch {}, batch {} (step {})\n", o_.run_dir, epoch_ + 1, batch_,
               step_);
  else if (!o_.quiet)
    fmt::print("resuming {} at step {}\n", o_.run_dir, step_);
}

std::vector<std::string> kept_checkpoints(const RunDir& run) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run.file("checkpoints"), ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("step_") && name.ends_with(".safetensors"))
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());  // step_ and 8 digits: by name is by step
  return files;
}

void Trainer::checkpoint(bool is_best, int64_t epoch, int64_t batch) {
  if (o_.run_dir.empty()) return;
  RunDir run{o_.run_dir};
  model_.save(run.file("last/model.safetensors"));
  if (is_best) model_.save(run.file("best/model.safetensors"));
  if (o_.keep_last > 1 && step_ > 0) {
    std::error_code ec;
    std::filesystem::create_directories(run.file("checkpoints"), ec);
    if (ec)
      throw Error(fmt::format("cannot create {} ({})", run.file("checkpoints"), ec.message()));
    model_.save(run.file(fmt::format("checkpoints/step_{:08}.safetensors", step_)));
    auto kept = kept_checkpoints(run);
    for (size_t i = 0; i + static_cast<size_t>(o_.keep_last) < kept.size(); ++i)
      std::filesystem::remove(kept[i]);
  }
  nn::save_checkpoint(run.file("last/training.safetensors"), model_, optimizer_, schedule_, step_,
                      {{"epoch", std::to_string(epoch)}, {"batch", std::to_string(batch)}});
  write_run_json();
  curve_.write_csv(run.file("loss.csv"));
  curve_.write_svg(run.file("loss.svg"), o_.title);
}

void Trainer::write_run_json() const {
  nlohmann::json meta = run_info;
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& p : curve_.train) curve.push_back({p.step, p.train_loss, p.lr});
  meta["curve"] = curve;
  meta["history"] = history_;
  meta["best"] = best_;
  meta["step"] = step_;
  meta["seconds"] = elapsed();
  RunDir{o_.run_dir}.write_run(meta);
}

double time_left(double seconds_per_batch, int64_t batches_left, double time_budget,
                 double elapsed) {
  const double pace = seconds_per_batch * static_cast<double>(batches_left);
  return time_budget > 0 ? std::min(pace, std::max(0.0, time_budget - elapsed)) : pace;
}

std::string format_metrics(const Metrics& m) {
  // The usual ones first, in one order, however the object was read back.
  const std::vector<std::string> first{"valid_loss", "bleu", "exact_match", "accuracy"};
  std::vector<std::string> keys;
  for (const auto& k : first)
    if (m.contains(k)) keys.push_back(k);
  for (const auto& [k, v] : m.items())
    if (std::find(first.begin(), first.end(), k) == first.end()) keys.push_back(k);
  std::string s;
  for (const auto& key : keys) {
    const auto& value = m[key];
    if (!value.is_number()) continue;
    const double v = value.get<double>();
    if (key == "valid_loss")
      s += fmt::format("  valid loss {:.4f}", v);
    else if (key == "bleu")
      s += fmt::format("  BLEU {:.2f}", v);
    else if (key == "exact_match" || key == "accuracy")
      s += fmt::format("  {} {:.1f}%", key == "accuracy" ? "accuracy" : "exact", v);
    else
      s += fmt::format("  {} {:.4g}", key, v);
  }
  return s;
}

namespace {

// The tensors a batch holds, by name, in its fields' order.
std::vector<std::pair<const char*, const Tensor*>> held(const Batch& b) {
  std::vector<std::pair<const char*, const Tensor*>> out;
  for (const auto& [name, t] :
       {std::pair{"input", &b.input}, std::pair{"decoder_input", &b.decoder_input},
        std::pair{"labels", &b.labels}})
    if (t->defined()) out.emplace_back(name, t);
  return out;
}

}  // namespace

int64_t Batch::rows() const {
  const auto tensors = held(*this);
  if (tensors.empty()) throw Error("Trainer: batch returned a Batch that holds no tensor");
  const auto& [first, t0] = tensors[0];
  const int64_t rows = t0->dim() > 0 ? t0->size(0) : 0;
  for (const auto& [name, t] : tensors)
    if (t->dim() == 0 || t->size(0) != rows || rows == 0)
      throw Error(fmt::format(
          "Trainer: a batch's tensors must share their first dimension, the batch (of at least "
          "one row): its {} has shape {}, its {} {}",
          first, t0->shape().str(), name, t->shape().str()));
  return rows;
}

Batch Batch::slice(int64_t begin, int64_t end) const {
  auto part = [&](const Tensor& t) { return t.defined() ? t.slice(0, begin, end) : Tensor(); };
  return {part(input), part(decoder_input), part(labels)};
}

double Trainer::elapsed() const { return seconds_before_ + seconds_since(started_); }

namespace {

// Token-weighted sums of the training loss, and of its plain NLL where a step has one, since
// `since`: what a line reports as the mean since the previous one, and its tokens/s.
struct LossSum {
  double loss = 0, nll = 0;
  int64_t tokens = 0, nll_tokens = 0;
  Clock::time_point since = Clock::now();

  void add(double step_loss, int64_t weight, double step_nll) {
    loss += step_loss * static_cast<double>(weight);
    tokens += weight;
    if (std::isfinite(step_nll)) {
      nll += step_nll * static_cast<double>(weight);
      nll_tokens += weight;
    }
  }
  double tokens_per_second() const {
    return static_cast<double>(tokens) / std::max(1e-9, seconds_since(since));
  }
  // " (nll 1.2345)" when the loss was label-smoothed, else "".
  std::string nll_part() const {
    return nll_tokens ? fmt::format(" (nll {:.4f})", nll / static_cast<double>(nll_tokens))
                      : std::string();
  }
};

// A data-parallel batch's loss: its parts' means, weighted by their tokens.
BatchLoss weighted_mean(const std::vector<BatchLoss>& parts) {
  BatchLoss whole{Tensor(), 0, 0.0};
  double sum = 0;
  for (const BatchLoss& p : parts) {
    whole.tokens += p.tokens;
    sum += p.loss.item<double>() * static_cast<double>(p.tokens);
    whole.nll += p.nll * static_cast<double>(p.tokens);  // NaN if any part has none
  }
  const double tokens = static_cast<double>(std::max<int64_t>(whole.tokens, 1));
  whole.loss = full({}, static_cast<float>(sum / tokens));
  whole.nll /= tokens;
  return whole;
}

}  // namespace

struct Trainer::Loop {
  int64_t epochs = 0;         // the run's, or as many as the time budget allows
  bool until_budget = false;  // no number of epochs: the time budget is the run's length
  std::string of_epochs;      // "/20" after an epoch's number, or nothing when the budget decides
  int64_t first_step = 0;     // this process's first: its pace is from there
  int64_t batches = 0;        // in this epoch
  int64_t first_batch = 0;    // where this process started this epoch
  Clock::time_point epoch_started = Clock::now();  // for the ETA
  LossSum since_line;    // since the last evaluation's line (or the epoch's start)
  LossSum since_log;     // since the last log_every line
  LossSum curve_window;  // each step's loss weighted 1: a loss-curve point every curve_every
  double last_eval_seconds = 0;
  bool stop = false;
  TrainResult result;
  std::optional<nn::DataParallel> parallel;
  std::vector<BatchLoss> parts;  // this step's, until its backward
  std::optional<ProgressBar> bar;
};

void Trainer::check_setup() const {
  if (!batches || (!loss && !(batch && batch_loss)))
    throw Error("Trainer: set batches, and loss (or batch and batch_loss), before fit()");
  if (o_.epochs < 0 || (o_.epochs == 0 && !(o_.time_budget > 0)))
    throw Error(fmt::format(
        "Trainer: epochs must be >= 1, or 0 with a time budget (got epochs {}, time budget {})",
        o_.epochs, o_.time_budget));
}

void Trainer::start_run() {
  started_ = Clock::now();
  seconds_before_ = o_.resume ? 0 : o_.seconds_before;
  if (o_.resume) {
    restore();
  } else if (!o_.run_dir.empty()) {
    // A run folder of one's own (the guide's example) need not exist yet: `anatomy train`
    // creates it with RunDir::create, a program using the Trainer directly may not have.
    for (const char* sub : {"best", "last"}) {
      std::error_code ec;
      std::filesystem::create_directories(RunDir{o_.run_dir}.file(sub), ec);
      if (ec)
        throw Error(fmt::format("Trainer: cannot create {} ({})", RunDir{o_.run_dir}.file(sub),
                                ec.message()));
    }
    checkpoint(false, epoch_, batch_);  // a run from the start: resume and translate work at once
  }
}

TrainResult Trainer::fit() {
  check_setup();
  Loop loop;
  loop.until_budget = o_.epochs == 0;
  loop.epochs = loop.until_budget ? std::numeric_limits<int64_t>::max() : o_.epochs;
  loop.of_epochs = loop.until_budget ? "" : fmt::format("/{}", o_.epochs);
  start_run();
  StopOnSignal signals;
  std::optional<DetectAnomaly> anomaly;
  if (o_.detect_anomaly) anomaly.emplace(model_.named_parameters());
  model_.train();
  loop.first_step = step_;
  // Anomaly checks see the ops of their own thread only, so detect_anomaly trains on one.
  if (replicate && !o_.detect_anomaly) loop.parallel.emplace(model_, replicate);
  // On the reference kernels a batch stays one part (nn::DataParallel::parts), whatever the
  // threads.
  const int64_t parts = loop.parallel ? loop.parallel->parts(get_num_threads()) : 1;
  if (parts > 1 && !o_.quiet)
    fmt::print("data parallel: each batch's rows split between {} threads\n", parts);
  for (; epoch_ < loop.epochs && !loop.stop; ++epoch_, batch_ = 0) train_epoch(loop);
  if (!o_.quiet && loop.result.out_of_time)
    fmt::print("time budget of {} reached\n", clock(o_.time_budget));
  if (!o_.quiet && loop.result.interrupted) fmt::print("interrupted: saved a checkpoint\n");
  loop.result.step = step_;
  loop.result.best = best_;
  return loop.result;
}

void Trainer::train_epoch(Loop& loop) {
  loop.batches = batches(epoch_);
  loop.bar.emplace(o_.unit == "epoch" ? fmt::format("epoch {}{}", epoch_ + 1, loop.of_epochs)
                                      : std::string("training"),
                   loop.batches);
  loop.since_line = loop.since_log = loop.curve_window = LossSum{};
  loop.first_batch = batch_;
  loop.epoch_started = Clock::now();
  while (batch_ < loop.batches) {
    const bool out_of_time =
        o_.time_budget > 0 && elapsed() + loop.last_eval_seconds > o_.time_budget;
    if (interrupted() || out_of_time) {
      loop.result.interrupted = interrupted();
      loop.result.out_of_time = !loop.result.interrupted;
      loop.stop = true;
      break;
    }
    train_step(loop);
    report_progress(loop);
    if (o_.eval_every > 0 && step_ % o_.eval_every == 0 && batch_ < loop.batches) {
      loop.bar->clear();
      evaluate_and_checkpoint(loop, false, false);
    }
  }
  loop.bar->clear();
  if (batch_ == loop.batches)
    evaluate_and_checkpoint(loop, true, epoch_ + 1 == loop.epochs);
  else if (batch_ > loop.first_batch)  // stopped inside the epoch: keep what it trained
    evaluate_and_checkpoint(loop, false, true);
}

void Trainer::train_step(Loop& loop) {
  const BatchLoss b = forward(loop);
  const double l = b.loss.item<double>();
  if (!std::isfinite(l)) {  // before backward: the weights and the last checkpoint stay finite
    throw Error(fmt::format(
        "Trainer: the loss became {} at step {} ({} {}, batch {}); stopped before it reached "
        "the weights{}. A lower learning rate (--lr) or clipping (--clip) usually helps",
        std::isnan(l) ? "NaN"
        : l > 0       ? "inf"
                      : "-inf",
        step_ + 1, o_.unit == "epoch" ? "epoch" : "pass", epoch_ + 1, batch_,
        o_.run_dir.empty() ? "" : fmt::format("; {} keeps its last checkpoint", o_.run_dir)));
  }
  optimizer_.zero_grad();
  backward(loop);
  if (o_.clip > 0) nn::clip_grad_norm_(model_.parameters(), static_cast<float>(o_.clip));
  optimizer_.step();
  if (schedule_) {
    plan_schedule(loop);
    schedule_->step();
  }
  ++step_;
  ++batch_;
  loop.since_line.add(l, b.tokens, b.nll);
  loop.since_log.add(l, b.tokens, b.nll);
  loop.curve_window.add(l, 1, NAN);
  if (loop.curve_window.tokens == o_.curve_every) {
    curve_.train.push_back(
        {step_, loop.curve_window.loss / static_cast<double>(o_.curve_every), optimizer_.lr()});
    loop.curve_window = LossSum{};
  }
}

// A step's forward, over the whole batch or over the parts of a data-parallel one; the parts
// stay in `loop.parts` for the backward.
BatchLoss Trainer::forward(Loop& loop) {
  if (loss) {
    loop.parts = {loss(epoch_, batch_)};
    return loop.parts[0];
  }
  const Batch whole = batch(epoch_, batch_);
  const int64_t rows = whole.rows();
  const int64_t n = loop.parallel ? loop.parallel->parts(rows) : 1;
  loop.parts.assign(n, BatchLoss{});
  if (n == 1) {
    loop.parts[0] = batch_loss(model_, whole);
    return loop.parts[0];
  }
  loop.parallel->run(n, [&](int64_t k, nn::Module& model) {
    const auto [begin, end] = nn::DataParallel::part_rows(rows, k, n);
    loop.parts[k] = batch_loss(model, whole.slice(begin, end));
  });
  return weighted_mean(loop.parts);
}

// The step's backward into the model's .grad: each part's weighted by its share of the tokens,
// and the replicas' gradients added into the model's.
void Trainer::backward(Loop& loop) {
  auto& parts = loop.parts;
  if (parts.size() == 1) {
    parts[0].loss.backward();
  } else {
    int64_t tokens = 0;
    for (const BatchLoss& p : parts) tokens += p.tokens;
    loop.parallel->run(static_cast<int64_t>(parts.size()), [&](int64_t k, nn::Module&) {
      const Tensor& l = parts[k].loss;
      l.backward(full(l.shape(), static_cast<float>(parts[k].tokens) /
                                     static_cast<float>(std::max<int64_t>(tokens, 1))));
    });
    loop.parallel->reduce_gradients();
  }
  parts.clear();
}

// A run as long as its budget: the steps it will reach, from this process's pace so far
// (evaluations included), for a schedule that decays to the run's end.
void Trainer::plan_schedule(const Loop& loop) {
  const int64_t done = step_ - loop.first_step;
  const double spent = seconds_since(started_);  // by this process: its pace
  if (!loop.until_budget || done < 10 || spent <= 0) return;
  const double left = std::max(0.0, o_.time_budget - elapsed() - loop.last_eval_seconds);
  schedule_->plan(step_ + static_cast<int64_t>(left * static_cast<double>(done) / spent));
}

void Trainer::report_progress(Loop& loop) {
  if (o_.quiet) return;
  const double eta =
      time_left(seconds_since(loop.epoch_started) / static_cast<double>(batch_ - loop.first_batch),
                loop.batches - batch_, o_.time_budget, elapsed());
  loop.bar->update(
      batch_, fmt::format("loss {:.3f} lr {:.1e} {} tok/s ETA {}",
                          loop.since_line.loss / static_cast<double>(loop.since_line.tokens),
                          optimizer_.lr(), human(loop.since_line.tokens_per_second()), clock(eta)));
  // A line a log can follow inside a long epoch (the bar draws only on a terminal).
  if (o_.log_every <= 0 || step_ % o_.log_every != 0 || batch_ >= loop.batches) return;
  loop.bar->clear();
  const LossSum& s = loop.since_log;
  const std::string where = o_.unit == "epoch" ? fmt::format("epoch {}{}, batch {}/{}", epoch_ + 1,
                                                             loop.of_epochs, batch_, loop.batches)
                                               : fmt::format("step {}/{}", step_, loop.batches);
  fmt::print("{}  train loss {:.4f}{}  lr {:.2e}  ({} tok/s, {})\n", where,
             s.loss / static_cast<double>(std::max<int64_t>(s.tokens, 1)), s.nll_part(),
             optimizer_.lr(), human(s.tokens_per_second()), clock(elapsed()));
  std::fflush(stdout);
  loop.since_log = LossSum{};
}

void Trainer::evaluate_and_checkpoint(Loop& loop, bool complete, bool final) {
  const Metrics m = run_evaluation(loop, final);
  bool finite = true;  // a model whose metrics are NaN or infinite is never the best one
  for (const auto& [k, v] : m.items())
    finite = finite && (!v.is_number() || std::isfinite(v.get<double>()));
  const bool is_best = evaluate && finite && (best_.empty() || better(m, best_));
  if (is_best) best_ = m;
  if (evaluate) record_history(loop, m, complete);
  // Where a resumed run starts: after a whole epoch, the next one's first batch.
  if (complete)
    checkpoint(is_best, epoch_ + 1, 0);
  else
    checkpoint(is_best, epoch_, batch_);
  if (!o_.quiet) print_evaluation(loop, m, complete, final, is_best);
  if (evaluate && should_stop && should_stop(m)) loop.stop = true;
  loop.since_line = LossSum{};  // the next line's train loss is the mean since this one
}

// The validation metrics (none without `evaluate`); the model goes back to training mode, and
// the evaluation's seconds are what the time budget keeps for the last one.
Metrics Trainer::run_evaluation(Loop& loop, bool final) {
  const auto t0 = Clock::now();
  Metrics m = evaluate ? evaluate(final) : Metrics::object();
  model_.train();
  loop.last_eval_seconds = seconds_since(t0);
  return m;
}

void Trainer::record_history(const Loop& loop, const Metrics& m, bool complete) {
  const LossSum& s = loop.since_line;
  nlohmann::json h = {
      {o_.unit, o_.unit == "epoch" ? epoch_ + 1 : step_},
      {"step", step_},
      {"train_loss",
       s.tokens ? nlohmann::json(s.loss / static_cast<double>(s.tokens)) : nlohmann::json()}};
  if (s.nll_tokens) h["train_nll"] = s.nll / static_cast<double>(s.nll_tokens);
  for (const auto& [k, v] : m.items()) h[k] = v;
  h["complete"] = complete;
  h["seconds"] = elapsed();
  history_.push_back(h);
  curve_.eval.push_back(eval_point(h));
}

// "epoch 3/20  train loss 1.2345 (nll 1.1234)  valid loss ...  (12.3k tok/s, 1:05)  best".
void Trainer::print_evaluation(const Loop& loop, const Metrics& m, bool complete, bool final,
                               bool is_best) const {
  const LossSum& s = loop.since_line;
  const std::string where = o_.unit == "epoch"
                                ? fmt::format("epoch {}{}{}", epoch_ + 1, loop.of_epochs,
                                              complete ? ""
                                              : final  ? " (partial)"
                                                       : fmt::format(", step {}", step_))
                                : fmt::format("step {}/{}", step_, loop.batches);
  fmt::print("{}  train loss {}{}{}  ({} tok/s, {}){}\n", where,
             s.tokens ? fmt::format("{:.4f}", s.loss / static_cast<double>(s.tokens)) : "-",
             s.nll_part(), format_metrics(m), human(s.tokens_per_second()), clock(elapsed()),
             !is_best             ? ""
             : o_.best_by.empty() ? "  best"
                                  : fmt::format("  best ({})", o_.best_by));
  std::fflush(stdout);
}

}  // namespace anatomy::training
