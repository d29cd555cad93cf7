// A training run's folder (anatomy train --out DIR), which is also the checkpoint that
// translate, evaluate, generate and attention read:
//   config.json                the model's TransformerConfig
//   run.json                   what it was trained on, options, history, best score
//   source_tokenizer.*         tokenizer files (json, vocab.txt, merges.txt for BPE)
//   target_tokenizer.*
//   best/model.safetensors     the weights with the best validation score
//   last/model.safetensors     the latest weights
//   last/training.safetensors  model, optimizer, schedule, random generator, position: --resume
//   loss.csv, loss.svg         the loss curve
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/config.hpp"

namespace anatomy::training {

// An exclusive lock on a run folder (flock on DIR/.lock, released when this object goes or the
// process ends, however it ends): one training per folder.
class RunLock {
 public:
  explicit RunLock(int fd = -1) : fd_(fd) {}
  RunLock(RunLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RunLock& operator=(RunLock&& o) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

 private:
  int fd_;
};

struct RunDir {
  std::string path;
  std::string file(const std::string& name) const { return path + "/" + name; }

  // Creates the folder (and best/, last/) or explains why it cannot, and locks it.
  [[nodiscard]] RunLock create() const;
  // Locks an existing folder (to resume it); refused, with the holder's pid, while another
  // training holds it.
  [[nodiscard]] RunLock lock() const;
  nlohmann::json read_run() const;  // run.json, or an error naming the folder
  // run.json of a run of this kind (translation, lm, classifier), or an error saying what it holds.
  nlohmann::json read_run(const std::string& kind) const;
  // Where a training run starts: a new run needs a folder without one (the empty JSON object is
  // returned); a resumed one, a run of this kind (its run.json is returned).
  nlohmann::json start(bool resume, const std::string& kind) const;
  void write_run(const nlohmann::json& run) const;  // atomically
  models::TransformerConfig read_config() const;
  // The weights to use: best/ if present, else last/.
  std::string weights() const;
};

}  // namespace anatomy::training
