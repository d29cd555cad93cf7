// The data of a translation run, read the one way training, evaluation and export all read it:
// the splits of a toy task or a TSV corpus (by the run's seed), and their token ids.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/data.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::training {

// Where a run's pairs come from, as `anatomy train` takes it and run.json's "data" keeps it.
struct DataSpec {
  std::string task;         // a toy task, or empty for a corpus
  std::string corpus;       // source<TAB>target lines
  std::string valid, test;  // the user's own held-out files; empty: cut from the corpus
  bool reverse = false;     // translate the second column into the first
  data::CorpusOptions read;
  // "source": held-out pairs are cut by source sentence (data::split_by_source); "pair": runs
  // trained before that, whose split shuffled single pairs.
  std::string split = "source";

  nlohmann::json to_json() const;
  // A run.json "data" object (checked by RunDir::read_run); one without "split" is a "pair" run.
  static DataSpec from_json(const nlohmann::json& data);
};

struct TranslationData {
  data::Splits splits;
  std::string description;          // "task reverse: ...", "corpus X: N pairs, ..."
  std::vector<std::string> report;  // how the held-out pairs were chosen, one line each
  std::string source_tokenizer = "bpe", target_tokenizer = "bpe";  // the kinds a task asks for
  bool is_task = false;
};

// The toy task or the corpus, split by `seed`; the training split cut to `limit` pairs when
// limit > 0.
TranslationData read_translation_data(const DataSpec& spec, uint64_t seed, int64_t limit);

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

// One epoch's batches of the training pairs: shuffled by the run's seed and the epoch together,
// so each epoch of a run, and each seed's epoch, has an order of its own. The exported train.py
// seeds its epochs the same way.
std::vector<data::Batch> epoch_batches(const Encoded& train, int64_t max_tokens, uint64_t seed,
                                       int64_t epoch);

}  // namespace anatomy::training
