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
//   checkpoints/step_N.safetensors  the last evaluated models, for averaging (--average N)
//   split/{train,valid,test}.tsv    a corpus run's pairs as it split them (what it held out)
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "autograd/tensor.hpp"
#include "models/config.hpp"

namespace anatomy::training {

// An exclusive lock on a run folder (platform::try_lock_file on DIR/.lock, released when this
// object goes or the process ends, however it ends): one training per folder.
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
  // A field of run.json with its type checked: an error naming the folder and the field, never
  // a raw JSON error (or, on a const object, undefined behaviour) for a missing or wrong value.
  template <typename T>
  T field(const nlohmann::json& run, const std::string& key) const {
    auto it = run.find(key);
    if (it != run.end()) {
      if constexpr (std::is_same_v<T, nlohmann::json>) {
        if (it->is_object()) return *it;
      } else if constexpr (std::is_same_v<T, std::string>) {
        if (it->is_string()) return it->template get<std::string>();
      } else if constexpr (std::is_unsigned_v<T>) {
        if (it->is_number_unsigned()) return it->template get<T>();
      } else {
        if (it->is_number()) return it->template get<T>();
      }
    }
    throw Error(fmt::format("{}: run.json's '{}' is {} (expected {})", path, key,
                            it == run.end() ? "missing" : it->dump(),
                            std::is_same_v<T, nlohmann::json> ? "an object"
                            : std::is_same_v<T, std::string>  ? "a string"
                            : std::is_unsigned_v<T>           ? "a number >= 0"
                                                              : "a number"));
  }
  // The weights to use: best/ if present, else last/.
  std::string weights() const;
};

}  // namespace anatomy::training
