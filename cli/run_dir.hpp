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

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::cli {

struct RunDir {
  std::string path;
  std::string file(const std::string& name) const { return path + "/" + name; }

  // Creates the folder (and best/, last/) or explains why it cannot.
  void create() const;
  nlohmann::json read_run() const;                  // run.json, or an error naming the folder
  void write_run(const nlohmann::json& run) const;  // atomically
  models::TransformerConfig read_config() const;
  // The weights to use: best/ if present, else last/.
  std::string weights() const;
};

// A trained translation model with its tokenizers, ready to translate.
struct Translator {
  models::TransformerConfig config;
  std::shared_ptr<models::Seq2SeqTransformer> model;
  std::unique_ptr<text::Tokenizer> source, target;
  int64_t bos = 2, eos = 3;

  static Translator load(const std::string& dir);
  // Source ids, or an error when the text is longer than the model's positions.
  std::vector<int64_t> encode_source(const std::string& text) const;
  std::vector<std::string> translate(const std::vector<std::string>& texts, int64_t beam = 1,
                                     float length_penalty = 0.6f, int64_t max_length = 0) const;
};

// "12.3k", "1.2M" for tokens/s.
std::string human(double x);
// "1:05" / "1:02:03"
std::string clock(double seconds);

}  // namespace anatomy::cli
