// BpeTokenizer: byte-pair encoding (Sennrich et al., 2016) trained from a corpus. Training
// starts from characters and repeatedly merges the most frequent adjacent pair inside words
// until the vocabulary reaches its size; encoding replays the merges in the order learned
// (bpe_merges.hpp). Any word can be spelled, so real corpora get compact vocabularies without
// [UNK].
#pragma once

#include <map>

#include "tokenizers/bpe_merges.hpp"
#include "tokenizers/tokenizer.hpp"

namespace anatomy::text {

class BpeTokenizer : public Tokenizer {
 public:
  BpeTokenizer(Vocabulary vocab, std::vector<std::pair<std::string, std::string>> merges,
               bool lowercase);
  static BpeTokenizer train(const std::vector<std::string>& texts, int64_t vocab_size,
                            bool lowercase = false, int64_t min_frequency = 2);
  static std::unique_ptr<BpeTokenizer> load(const std::string& path, Vocabulary vocab,
                                            bool lowercase);
  std::string kind() const override { return "bpe"; }
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  void save(const std::string& path) const override;

  bool lowercase;
  std::vector<std::pair<std::string, std::string>> merges;

 protected:
  std::string options_json() const override;

 private:
  std::vector<std::string> encode_piece(const std::string& piece) const;
  BpeMerges merges_;
  mutable std::map<std::string, std::vector<std::string>> cache_;
};

}  // namespace anatomy::text
