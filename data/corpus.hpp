// Reading a parallel corpus: tab-separated "source<TAB>target[<TAB>...]" lines, UTF-8 (the
// Tatoeba/Anki format of ../shared/data/tatoeba/eng-deu.tsv; extra columns such as the
// attribution are ignored).
#pragma once

#include "data/pairs.hpp"

namespace anatomy::data {

struct CorpusOptions {
  int64_t max_chars = 0;  // drop pairs whose source or target has more characters (0: keep all)
  bool skip_malformed = false;  // skip and count bad lines instead of stopping at the first
};

struct Corpus {
  std::vector<Pair> pairs;
  int64_t lines = 0, skipped_malformed = 0, skipped_long = 0;
};

// Errors name the file and the line: a line without a tab, an empty side, invalid UTF-8.
Corpus read_tsv(const std::string& path, const CorpusOptions& options = {});

// What decides that two pairs translate the same sentence: the source as the tokenizers read it
// (pre_tokenize's words and punctuation), lower-cased. "Tom is here." and "tom is  here ." agree.
std::string source_key(const std::string& source);

// Held-out pairs for a corpus of n pairs: 5%, at least 1 and at most 1000.
int64_t held_out_size(int64_t n);

struct SplitReport {
  int64_t pairs = 0, sources = 0;  // all pairs, and their distinct sources (source_key)
  int64_t repeated_pairs = 0;      // pairs whose source another pair has too (all kept)
  int64_t valid_sources = 0, test_sources = 0;
};

// The split every run of a corpus uses (training, resuming and evaluating must agree). Pairs are
// grouped by source_key, the groups shuffled by `seed`, and whole groups cut off until test and
// then valid hold at least `test_size` / `valid_size` pairs: no held-out source is trained on.
// Either size may be 0 (a held-out file of the user's own replaces that split).
Splits split_by_source(std::vector<Pair> pairs, int64_t valid_size, int64_t test_size,
                       uint64_t seed, const std::string& path, SplitReport* report = nullptr);

// The split of runs trained before split_by_source: pairs shuffled one by one, so a held-out
// source can also be in training (kept so that those runs evaluate on what they held out).
Splits split_corpus_by_pair(std::vector<Pair> pairs, uint64_t seed, const std::string& path);

}  // namespace anatomy::data
