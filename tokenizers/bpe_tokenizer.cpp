#include "tokenizers/bpe_tokenizer.hpp"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <unordered_map>

#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "io/safetensors.hpp"
#include "tokenizers/unicode.hpp"

namespace anatomy::text {

namespace {

// A piece as its initial symbols: "▁" and the characters.
std::vector<std::string> symbols_of(const std::string& piece) {
  std::vector<std::string> out;
  std::string rest = piece;
  if (rest.rfind(kSpaceMark, 0) == 0) {
    out.push_back(kSpaceMark);
    rest = rest.substr(kSpaceMark.size());
  }
  for (auto& c : utf8_chars(rest)) out.push_back(c);
  return out;
}

}  // namespace

BpeTokenizer::BpeTokenizer(Vocabulary vocab, std::vector<std::pair<std::string, std::string>> m,
                           bool lower)
    : lowercase(lower), merges(std::move(m)) {
  vocab_ = std::move(vocab);
  for (const auto& [left, right] : merges) {
    for (const std::string& t : {left, right, left + right})
      if (!vocab_.contains(t))
        throw Error(fmt::format(
            "BpeTokenizer: the merge '{} {}' needs '{}', which is not in the vocabulary", left,
            right, t));
    merges_.add(vocab_.id(left), vocab_.id(right), vocab_.id(left + right));
  }
}

BpeTokenizer BpeTokenizer::train(const std::vector<std::string>& texts, int64_t vocab_size,
                                 bool lower, int64_t min_frequency) {
  // Word types with counts, each as a symbol sequence.
  std::map<std::string, int64_t> word_counts;
  for (const auto& t : texts)
    for (auto& p : pre_tokenize(t, lower)) ++word_counts[p];
  std::vector<std::vector<std::string>> words;
  std::vector<int64_t> counts;
  std::set<std::string> chars;  // the base vocabulary: every symbol seen, in sorted order
  for (const auto& [w, c] : word_counts) {
    words.push_back(symbols_of(w));
    counts.push_back(c);
    chars.insert(words.back().begin(), words.back().end());
  }
  std::vector<std::string> tokens = kSpecialTokens;
  tokens.insert(tokens.end(), chars.begin(), chars.end());
  // Pair counts, kept up to date incrementally: a merge only touches the words containing it.
  using Pair = std::pair<std::string, std::string>;
  std::map<Pair, int64_t> pair_counts;
  std::map<Pair, std::set<size_t>> where;
  std::vector<Pair> touched;  // pairs whose count fell during one merge
  auto add_pairs = [&](size_t w, int64_t sign) {
    const auto& s = words[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      Pair p{s[i], s[i + 1]};
      pair_counts[p] += sign * counts[w];
      if (sign > 0)
        where[p].insert(w);
      else
        touched.push_back(p);
    }
  };
  for (size_t w = 0; w < words.size(); ++w) add_pairs(w, 1);
  std::vector<Pair> merges;
  while (static_cast<int64_t>(tokens.size()) < vocab_size) {
    // The most frequent pair; ties broken by the pair's text, so training is deterministic.
    const Pair* best = nullptr;
    int64_t best_count = 0;
    for (const auto& [p, c] : pair_counts)
      if (c > best_count) best = &p, best_count = c;
    if (!best || best_count < min_frequency) break;
    const Pair merge = *best;
    const std::string joined = merge.first + merge.second;
    merges.push_back(merge);
    tokens.push_back(joined);
    const std::set<size_t> affected = where[merge];
    for (size_t w : affected) {
      add_pairs(w, -1);
      auto& s = words[w];
      std::vector<std::string> merged;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == merge.first && s[i + 1] == merge.second) {
          merged.push_back(joined);
          ++i;
        } else {
          merged.push_back(s[i]);
        }
      }
      s = std::move(merged);
      add_pairs(w, 1);
    }
    pair_counts.erase(merge);
    where.erase(merge);
    for (const auto& p : touched) {
      auto it = pair_counts.find(p);
      if (it != pair_counts.end() && it->second <= 0) pair_counts.erase(it);
    }
    touched.clear();
  }
  return BpeTokenizer(Vocabulary(std::move(tokens)), std::move(merges), lower);
}

std::vector<std::string> BpeTokenizer::encode_piece(const std::string& piece) const {
  auto hit = cache_.find(piece);
  if (hit != cache_.end()) return hit->second;
  // One symbol a character; a character outside the vocabulary stays as it is (encode makes it
  // [UNK]).
  const std::vector<std::string> chars = symbols_of(piece);
  std::vector<BpeMerges::Symbol> symbols;
  for (size_t i = 0; i < chars.size(); ++i) symbols.push_back({vocab_.find(chars[i]), i, i + 1});
  std::vector<std::string> out;
  for (const auto& s : merges_.apply(symbols))
    out.push_back(s.id >= 0 ? vocab_.token(s.id) : chars[s.begin]);
  if (cache_.size() < 100000) cache_[piece] = out;
  return out;
}

std::vector<std::string> BpeTokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (const auto& piece : pre_tokenize(text, lowercase))
    for (auto& t : encode_piece(piece)) out.push_back(t);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> pieces;
  for (int64_t id : ids)
    if (!is_special(id)) pieces.push_back(vocab_.token(id));
  return join_pieces(pieces);
}

std::string BpeTokenizer::options_json() const {
  return fmt::format(R"({{"lowercase": {}}})", lowercase ? "true" : "false");
}

void BpeTokenizer::save(const std::string& path) const {
  Tokenizer::save(path);
  std::string text;
  for (const auto& [a, b] : merges) text += a + " " + b + "\n";
  write_file_atomically(path + ".merges.txt", text);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::string& path, Vocabulary vocab,
                                                 bool lower) {
  std::ifstream f = open_input("BpeTokenizer", path + ".merges.txt");
  std::vector<std::pair<std::string, std::string>> merges;
  std::string line;
  int64_t n = 0;
  while (std::getline(f, line)) {
    ++n;
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size())
      throw Error(
          fmt::format("BpeTokenizer: {}.merges.txt line {}: expected 'left right'", path, n));
    merges.push_back({line.substr(0, sp), line.substr(sp + 1)});
  }
  try {
    return std::make_unique<BpeTokenizer>(std::move(vocab), std::move(merges), lower);
  } catch (const Error& e) {
    // The merge's tokens are missing from the vocabulary: said of the merges file.
    const std::string what = e.what();
    throw Error(
        fmt::format("BpeTokenizer: {}.merges.txt: {}", path, what.substr(what.find(": ") + 2)));
  }
}

}  // namespace anatomy::text
