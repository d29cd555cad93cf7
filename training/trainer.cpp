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

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

void Trainer::save(bool is_best, int64_t epoch, int64_t batch) {
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

// The rows of a batch (Trainer::batch): every tensor's size along dim 0, which must agree.
static int64_t batch_rows(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw Error("Trainer: batch returned no tensors");
  const int64_t rows = tensors[0].dim() > 0 ? tensors[0].size(0) : 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].dim() == 0 || tensors[i].size(0) != rows || rows == 0)
      throw Error(fmt::format(
          "Trainer: batch's tensors must share their first dimension, the batch (of at least one "
          "row): tensor 0 has shape {}, tensor {} {}",
          tensors[0].shape().str(), i, tensors[i].shape().str()));
  return rows;
}

double Trainer::elapsed() const { return seconds_before_ + seconds_since(started_); }

TrainResult Trainer::fit() {
  if (!batches || (!loss && !(batch && batch_loss)))
    throw Error("Trainer: set batches, and loss (or batch and batch_loss), before fit()");
  if (o_.epochs < 0 || (o_.epochs == 0 && !(o_.time_budget > 0)))
    throw Error(fmt::format(
        "Trainer: epochs must be >= 1, or 0 with a time budget (got epochs {}, time budget {})",
        o_.epochs, o_.time_budget));
  // Without a number of epochs, the time budget is the run's length.
  const int64_t epochs = o_.epochs > 0 ? o_.epochs : std::numeric_limits<int64_t>::max();
  const bool until_budget = o_.epochs == 0;
  // "/20" after an epoch's number, or nothing when the budget decides.
  const std::string of_epochs = until_budget ? "" : fmt::format("/{}", o_.epochs);
  started_ = Clock::now();
  seconds_before_ = o_.resume ? 0 : o_.seconds_before;
  const bool saving = !o_.run_dir.empty();
  if (o_.resume) {
    restore();
  } else if (saving) {
    // A run folder of one's own (the guide's example) need not exist yet: `anatomy train`
    // creates it with RunDir::create, a program using the Trainer directly may not have.
    for (const char* sub : {"best", "last"}) {
      std::error_code ec;
      std::filesystem::create_directories(RunDir{o_.run_dir}.file(sub), ec);
      if (ec)
        throw Error(fmt::format("Trainer: cannot create {} ({})", RunDir{o_.run_dir}.file(sub),
                                ec.message()));
    }
    save(false, epoch_, batch_);  // a run from the start: resume and translate work at once
  }
  StopOnSignal signals;
  std::optional<DetectAnomaly> anomaly;
  if (o_.detect_anomaly) anomaly.emplace(model_.named_parameters());
  TrainResult result;
  model_.train();
  double last_eval_seconds = 0;
  bool stop = false;
  auto out_of_time = [&] {
    return o_.time_budget > 0 && elapsed() + last_eval_seconds > o_.time_budget;
  };
  // A run as long as its budget: the steps it will reach, from this process's pace so far
  // (evaluations included), for a schedule that decays to the run's end.
  const int64_t first_step = step_;
  auto plan = [&] {
    const int64_t done = step_ - first_step;
    const double spent = seconds_since(started_);  // by this process: its pace
    if (!until_budget || !schedule_ || done < 10 || spent <= 0) return;
    const double left = std::max(0.0, o_.time_budget - elapsed() - last_eval_seconds);
    schedule_->plan(step_ + static_cast<int64_t>(left * static_cast<double>(done) / spent));
  };
  // Evaluates, keeps the best, saves and prints one line; sets `stop` when should_stop says so.
  double epoch_loss = 0, window_loss = 0, epoch_nll = 0;
  int64_t epoch_tokens = 0, window = 0, tokens_seen = 0, epoch_nll_tokens = 0;
  // Since the last --log-every line: the token-weighted loss (and NLL), tokens, and when.
  double log_loss = 0, log_nll = 0;
  int64_t log_tokens = 0, log_nll_tokens = 0;
  Clock::time_point log_start = Clock::now();
  // " (nll 1.2345)" when the loss was label-smoothed, else "".
  auto nll_part = [](double nll_sum, int64_t tokens) {
    return tokens ? fmt::format(" (nll {:.4f})", nll_sum / static_cast<double>(tokens))
                  : std::string();
  };
  Clock::time_point epoch_start = Clock::now();
  auto checkpoint = [&](bool complete, bool final, int64_t total_batches) {
    const auto t0 = Clock::now();
    Metrics m = evaluate ? evaluate(final) : Metrics::object();
    model_.train();
    last_eval_seconds = seconds_since(t0);
    bool finite = true;  // a model whose metrics are NaN or infinite is never the best one
    for (const auto& [k, v] : m.items())
      finite = finite && (!v.is_number() || std::isfinite(v.get<double>()));
    const bool is_best = evaluate && finite && (best_.empty() || better(m, best_));
    if (is_best) best_ = m;
    const double train_loss =
        epoch_tokens ? epoch_loss / static_cast<double>(epoch_tokens) : static_cast<double>(NAN);
    if (evaluate) {
      nlohmann::json h = {{o_.unit, o_.unit == "epoch" ? epoch_ + 1 : step_},
                          {"step", step_},
                          {"train_loss", epoch_tokens ? nlohmann::json(train_loss) : nullptr}};
      if (epoch_nll_tokens) h["train_nll"] = epoch_nll / static_cast<double>(epoch_nll_tokens);
      for (const auto& [k, v] : m.items()) h[k] = v;
      h["complete"] = complete;
      h["seconds"] = elapsed();
      history_.push_back(h);
      curve_.eval.push_back(eval_point(h));
    }
    // Where a resumed run starts: after a whole epoch, the next one's first batch.
    if (complete)
      save(is_best, epoch_ + 1, 0);
    else
      save(is_best, epoch_, batch_);
    if (!o_.quiet) {
      const std::string where = o_.unit == "epoch"
                                    ? fmt::format("epoch {}{}{}", epoch_ + 1, of_epochs,
                                                  complete ? ""
                                                  : final  ? " (partial)"
                                                           : fmt::format(", step {}", step_))
                                    : fmt::format("step {}/{}", step_, total_batches);
      fmt::print(
          "{}  train loss {}{}{}  ({} tok/s, {}){}\n", where,
          epoch_tokens ? fmt::format("{:.4f}", train_loss) : "-",
          nll_part(epoch_nll, epoch_nll_tokens), format_metrics(m),
          human(static_cast<double>(tokens_seen) / std::max(1e-9, seconds_since(epoch_start))),
          clock(elapsed()),
          !is_best             ? ""
          : o_.best_by.empty() ? "  best"
                               : fmt::format("  best ({})", o_.best_by));
      std::fflush(stdout);
    }
    if (evaluate && should_stop && should_stop(m)) stop = true;
    // The next line's train loss is the mean since this one.
    epoch_loss = 0, epoch_tokens = 0, tokens_seen = 0, epoch_nll = 0, epoch_nll_tokens = 0;
    epoch_start = Clock::now();
  };

  // A step's forward, and its backward into the model's .grad: over the whole batch, or over
  // the parts of a data-parallel one. (Anomaly checks see the ops of their own thread only, so
  // detect_anomaly trains on one.)
  std::optional<nn::DataParallel> parallel;
  if (replicate && !o_.detect_anomaly) parallel.emplace(model_, replicate);
  if (parallel && get_num_threads() > 1 && !o_.quiet)
    fmt::print("data parallel: each batch's rows split between {} threads\n", get_num_threads());
  std::vector<BatchLoss> parts;  // this step's, until its backward
  auto forward = [&]() -> BatchLoss {
    if (loss) {
      parts = {loss(epoch_, batch_)};
      return parts[0];
    }
    const std::vector<Tensor> tensors = batch(epoch_, batch_);
    const int64_t rows = batch_rows(tensors);
    const int64_t n = parallel ? parallel->parts(rows) : 1;
    parts.assign(n, BatchLoss{});
    if (n == 1) {
      parts[0] = batch_loss(model_, tensors);
      return parts[0];
    }
    parallel->run(n, [&](int64_t k, nn::Module& model) {
      const auto [begin, end] = nn::DataParallel::part_rows(rows, k, n);
      std::vector<Tensor> part;
      for (const Tensor& t : tensors) part.push_back(t.slice(0, begin, end));
      parts[k] = batch_loss(model, part);
    });
    // The batch's loss: the parts' means, weighted by their tokens.
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
  };
  auto backward = [&] {
    if (parts.size() == 1) {
      parts[0].loss.backward();
    } else {
      int64_t tokens = 0;
      for (const BatchLoss& p : parts) tokens += p.tokens;
      parallel->run(static_cast<int64_t>(parts.size()), [&](int64_t k, nn::Module&) {
        const Tensor& l = parts[k].loss;
        l.backward(full(l.shape(), static_cast<float>(parts[k].tokens) /
                                       static_cast<float>(std::max<int64_t>(tokens, 1))));
      });
      parallel->reduce_gradients();
    }
    parts.clear();
  };

  for (; epoch_ < epochs && !stop; ++epoch_, batch_ = 0) {
    const int64_t n = batches(epoch_);
    ProgressBar bar(o_.unit == "epoch" ? fmt::format("epoch {}{}", epoch_ + 1, of_epochs)
                                       : std::string("training"),
                    n);
    epoch_start = Clock::now();
    epoch_loss = window_loss = epoch_nll = log_loss = log_nll = 0;
    epoch_tokens = window = tokens_seen = epoch_nll_tokens = log_tokens = log_nll_tokens = 0;
    log_start = Clock::now();
    const int64_t first_batch = batch_;
    const auto loop_start = Clock::now();  // for the ETA (epoch_start restarts at each log line)
    while (batch_ < n) {
      if (interrupted() || out_of_time()) {
        result.interrupted = interrupted();
        result.out_of_time = !result.interrupted;
        stop = true;
        break;
      }
      const BatchLoss b = forward();
      const double l = b.loss.item<double>();
      if (!std::isfinite(l)) {  // before backward: the weights and the last checkpoint stay finite
        throw Error(fmt::format(
            "Trainer: the loss became {} at step {} ({} {}, batch {}); stopped before it reached "
            "the weights{}. A lower learning rate (--lr) or clipping (--clip) usually helps",
            std::isnan(l) ? "NaN"
            : l > 0       ? "inf"
                          : "-inf",
            step_ + 1, o_.unit == "epoch" ? "epoch" : "pass", epoch_ + 1, batch_,
            saving ? fmt::format("; {} keeps its last checkpoint", o_.run_dir) : ""));
      }
      optimizer_.zero_grad();
      backward();
      if (o_.clip > 0) nn::clip_grad_norm_(model_.parameters(), static_cast<float>(o_.clip));
      optimizer_.step();
      if (schedule_) {
        plan();
        schedule_->step();
      }
      ++step_;
      ++batch_;
      epoch_loss += l * static_cast<double>(b.tokens);
      epoch_tokens += b.tokens;
      tokens_seen += b.tokens;
      log_loss += l * static_cast<double>(b.tokens);
      log_tokens += b.tokens;
      if (std::isfinite(b.nll)) {
        epoch_nll += b.nll * static_cast<double>(b.tokens);
        epoch_nll_tokens += b.tokens;
        log_nll += b.nll * static_cast<double>(b.tokens);
        log_nll_tokens += b.tokens;
      }
      window_loss += l;
      if (++window == o_.curve_every) {
        curve_.train.push_back(
            {step_, window_loss / static_cast<double>(o_.curve_every), optimizer_.lr()});
        window = 0;
        window_loss = 0;
      }
      if (!o_.quiet) {
        const double eta =
            time_left(seconds_since(loop_start) / static_cast<double>(batch_ - first_batch),
                      n - batch_, o_.time_budget, elapsed());
        bar.update(batch_,
                   fmt::format("loss {:.3f} lr {:.1e} {} tok/s ETA {}",
                               epoch_loss / static_cast<double>(epoch_tokens), optimizer_.lr(),
                               human(static_cast<double>(tokens_seen) /
                                     std::max(1e-9, seconds_since(epoch_start))),
                               clock(eta)));
      }
      // A line a log can follow inside a long epoch (the bar draws only on a terminal).
      if (!o_.quiet && o_.log_every > 0 && step_ % o_.log_every == 0 && batch_ < n) {
        bar.clear();
        const std::string where = o_.unit == "epoch" ? fmt::format("epoch {}{}, batch {}/{}",
                                                                   epoch_ + 1, of_epochs, batch_, n)
                                                     : fmt::format("step {}/{}", step_, n);
        fmt::print(
            "{}  train loss {:.4f}{}  lr {:.2e}  ({} tok/s, {})\n", where,
            log_loss / static_cast<double>(std::max<int64_t>(log_tokens, 1)),
            nll_part(log_nll, log_nll_tokens), optimizer_.lr(),
            human(static_cast<double>(log_tokens) / std::max(1e-9, seconds_since(log_start))),
            clock(elapsed()));
        std::fflush(stdout);
        log_loss = log_nll = 0;
        log_tokens = log_nll_tokens = 0;
        log_start = Clock::now();
      }
      if (o_.eval_every > 0 && step_ % o_.eval_every == 0 && batch_ < n) {
        bar.clear();
        checkpoint(false, false, n);
      }
    }
    bar.clear();
    if (batch_ == n) {
      checkpoint(true, epoch_ + 1 == epochs, n);
      continue;
    }
    // Stopped inside the epoch: evaluate and save what was trained since the last save.
    if (batch_ > first_batch) checkpoint(false, true, n);
  }
  if (!o_.quiet && result.out_of_time)
    fmt::print("time budget of {} reached\n", clock(o_.time_budget));
  if (!o_.quiet && result.interrupted) fmt::print("interrupted: saved a checkpoint\n");
  result.step = step_;
  result.best = best_;
  return result;
}

}  // namespace anatomy::training
