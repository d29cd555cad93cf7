// The data of a translation run, read the one way training, evaluation and export all read it:
// the splits of a toy task or a TSV corpus (by the run's seed), and their token ids.
#pragma once

#include <string>
#include <vector>

#include "data/data.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::training {

struct TranslationData {
  data::Splits splits;
  std::string description;  // "task reverse: ...", "corpus X: N pairs, ..."
  std::string source_tokenizer = "bpe", target_tokenizer = "bpe";  // the kinds a task asks for
  bool is_task = false;
};

// A toy task (when `task` is set) or the corpus, split by `seed`; the training split cut to
// `limit` pairs when limit > 0.
TranslationData read_translation_data(const std::string& task, const std::string& corpus,
                                      uint64_t seed, const data::CorpusOptions& read,
                                      int64_t limit);

// Token ids of pairs, and the texts they came from.
struct Encoded {
  std::vector<std::vector<int64_t>> src, tgt;
  std::vector<std::string> sources, references;
};
Encoded encode(const std::vector<data::Pair>& pairs, const text::Tokenizer& source,
               const text::Tokenizer& target);
// Drops the pairs a model with `max_positions` cannot take (the target counts its end token);
// returns how many.
size_t drop_too_long(Encoded& e, int64_t max_positions);

}  // namespace anatomy::training
