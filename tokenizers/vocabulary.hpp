// Vocabulary: tokens and their ids (the line number in vocab.txt, as BERT's vocab file), with
// the special tokens looked up by name.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace anatomy::text {

// The special tokens of the project's own vocabularies, always ids 0-3 in this order.
inline const std::vector<std::string> kSpecialTokens = {"[PAD]", "[UNK]", "[BOS]", "[EOS]"};

class Vocabulary {
 public:
  Vocabulary() = default;
  // Throws on a duplicate token.
  explicit Vocabulary(std::vector<std::string> tokens);
  // One token per line (BERT's vocab.txt); a missing, empty or duplicate-holding file is an error.
  // escaped: the file was written by save(), which spells a backslash, newline and carriage return
  // inside a token as \\, \n and \r, so that character vocabularies of text with line breaks fit
  // one token per line. Plain files (BERT's) are read as they are.
  static Vocabulary load(const std::string& path, bool escaped = false);
  // Atomically. Without escaping, a token holding a line break is an error.
  void save(const std::string& path, bool escaped = true) const;

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  bool contains(const std::string& token) const { return ids_.count(token) > 0; }
  // The token's id, or -1.
  int64_t find(const std::string& token) const;
  // The id of a token that must exist (a special token), or an Error naming it.
  int64_t id(const std::string& token) const;
  // The token with this id, or an Error for an out-of-range id.
  const std::string& token(int64_t id) const;
  const std::vector<std::string>& tokens() const { return tokens_; }

  // Builds a vocabulary: the special tokens first, then tokens by descending count (ties in
  // byte order, so the result is deterministic), keeping those seen at least min_frequency
  // times, at most max_size tokens in all (0: no limit).
  static Vocabulary build(const std::vector<std::vector<std::string>>& tokenized,
                          int64_t min_frequency = 1, int64_t max_size = 0,
                          const std::vector<std::string>& specials = kSpecialTokens);

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace anatomy::text
