// Reading a parallel corpus: tab-separated "source<TAB>target[<TAB>...]" lines, UTF-8 (the
// Tatoeba/Anki format of ../shared/data/tatoeba/eng-deu.tsv; extra columns such as the
// attribution are ignored).
#pragma once

#include "data/pairs.hpp"

namespace anatomy::data {

struct CorpusOptions {
  int64_t max_chars = 0;        // drop pairs whose source or target is longer (0: keep all)
  bool skip_malformed = false;  // skip and count bad lines instead of stopping at the first
};

struct Corpus {
  std::vector<Pair> pairs;
  int64_t lines = 0, skipped_malformed = 0, skipped_long = 0;
};

// Errors name the file and the line: a line without a tab, an empty side, invalid UTF-8.
Corpus read_tsv(const std::string& path, const CorpusOptions& options = {});

// The split every run of a corpus uses (training, resuming and evaluating must agree): 5% each
// for valid and test, at least 1 and at most 1000 pairs, shuffled by `seed`.
Splits split_corpus(std::vector<Pair> pairs, uint64_t seed, const std::string& path);

}  // namespace anatomy::data
