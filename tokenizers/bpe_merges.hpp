// Byte-pair encoding's merges (Sennrich et al., 2016), applied as the tokenizers library applies
// them: a word starts as a row of symbols (its characters), then the neighbouring pair whose
// merge was learned earliest is joined into one symbol, again and again (of two places with the
// same pair, the leftmost first), until no learned pair is left.
// BpeTokenizer and the tokenizer.json pipeline (its "BPE" model) both merge here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace anatomy::text {

class BpeMerges {
 public:
  // One symbol of a word: its vocabulary id (-1 for a symbol outside the vocabulary, which never
  // merges) and the characters [begin, end) of the word it spells.
  struct Symbol {
    int64_t id;
    size_t begin, end;
  };

  // Learns one more merge, ranked after those added before: left + right -> merged. A pair
  // learned twice keeps its first rank, as the library's reader does.
  void add(int64_t left, int64_t right, int64_t merged);
  size_t size() const { return merges_.size(); }
  // The word's symbols after every merge that applies.
  std::vector<Symbol> apply(const std::vector<Symbol>& symbols) const;

 private:
  struct Merge {
    int64_t rank, merged;
  };
  // (left, right) -> its merge; the pair of ids is the key, left in the high 32 bits.
  static uint64_t key(int64_t left, int64_t right) {
    return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  }
  const Merge* find(int64_t left, int64_t right) const;
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace anatomy::text
