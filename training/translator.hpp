// Translator: a trained translation model with its tokenizers, loaded from a run folder
// (anatomy train --out DIR), ready to translate: what `anatomy translate`, `evaluate`,
// `attention` and the tutorials use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::training {

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

}  // namespace anatomy::training
