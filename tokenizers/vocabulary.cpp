#include "tokenizers/vocabulary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "io/safetensors.hpp"

namespace anatomy::text {

Vocabulary::Vocabulary(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!ids_.emplace(tokens_[i], static_cast<int64_t>(i)).second)
      throw Error(fmt::format("Vocabulary: token '{}' appears twice (ids {} and {})", tokens_[i],
                              ids_[tokens_[i]], i));
}

namespace {

std::string escape(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

std::string unescape(const std::string& line, const std::string& path, size_t line_number) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      out += line[i];
      continue;
    }
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (next != '\\' && next != 'n' && next != 'r')
      throw Error(fmt::format(
          "Vocabulary: {} line {}: expected \\\\, \\n or \\r after a backslash, got '{}'", path,
          line_number, line));
    out += next == 'n' ? '\n' : next == 'r' ? '\r' : '\\';
    ++i;
  }
  return out;
}

}  // namespace

Vocabulary Vocabulary::load(const std::string& path, bool escaped) {
  std::ifstream f = open_input("Vocabulary", path);
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(escaped ? unescape(line, path, tokens.size() + 1) : line);
  }
  if (tokens.empty()) throw Error(fmt::format("Vocabulary: {} is empty", path));
  try {
    return Vocabulary(std::move(tokens));
  } catch (const Error& e) {
    throw Error(fmt::format("{} (in {})", e.what(), path));
  }
}

void Vocabulary::save(const std::string& path, bool escaped) const {
  std::string text;
  for (const auto& t : tokens_) {
    if (!escaped && t.find_first_of("\r\n") != std::string::npos)
      throw Error(fmt::format(
          "Vocabulary: cannot save a token with a line break to the one-token-per-line file {} "
          "without escaping",
          path));
    text += (escaped ? escape(t) : t) + "\n";
  }
  write_file_atomically(path, text);
}

int64_t Vocabulary::find(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

int64_t Vocabulary::id(const std::string& token) const {
  const int64_t i = find(token);
  if (i < 0) throw Error(fmt::format("Vocabulary: the vocabulary has no '{}' token", token));
  return i;
}

const std::string& Vocabulary::token(int64_t id) const {
  if (id < 0 || id >= size())
    throw Error(
        fmt::format("Vocabulary: id {} is out of range for a vocabulary of {}", id, size()));
  return tokens_[static_cast<size_t>(id)];
}

Vocabulary Vocabulary::build(const std::vector<std::vector<std::string>>& tokenized,
                             int64_t min_frequency, int64_t max_size,
                             const std::vector<std::string>& specials) {
  std::map<std::string, int64_t> counts;
  for (const auto& seq : tokenized)
    for (const auto& t : seq) ++counts[t];
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> tokens = specials;
  for (const auto& [t, c] : sorted) {
    if (max_size > 0 && static_cast<int64_t>(tokens.size()) >= max_size) break;
    if (c < min_frequency) break;
    if (std::find(specials.begin(), specials.end(), t) == specials.end()) tokens.push_back(t);
  }
  return Vocabulary(std::move(tokens));
}

}  // namespace anatomy::text
