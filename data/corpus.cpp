#include "data/corpus.hpp"

#include <fmt/format.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include "autograd/random.hpp"
#include "autograd/tensor.hpp"
#include "io/input_file.hpp"
#include "tokenizers/tokenizer.hpp"

namespace anatomy::data {

namespace {

// Characters of valid UTF-8 text: every byte but the continuation bytes (10xxxxxx) starts one.
int64_t characters(const std::string& utf8) {
  int64_t n = 0;
  for (const char c : utf8) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int32_t n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

Corpus read_tsv(const std::string& path, const CorpusOptions& o) {
  std::ifstream f = open_input("corpus", path);
  Corpus c;
  std::string line;
  while (std::getline(f, line)) {
    ++c.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;  // blank lines are allowed
    std::string problem;
    const auto tab = line.find('\t');
    if (!valid_utf8(line)) {
      problem = "is not valid UTF-8";
    } else if (tab == std::string::npos) {
      problem = "has no tab between source and target";
    }
    Pair p;
    if (problem.empty()) {
      const auto tab2 = line.find('\t', tab + 1);
      p.source = trim(line.substr(0, tab));
      p.target = trim(
          line.substr(tab + 1, tab2 == std::string::npos ? std::string::npos : tab2 - tab - 1));
      if (p.source.empty() || p.target.empty()) problem = "has an empty source or target";
    }
    if (!problem.empty()) {
      if (!o.skip_malformed)
        throw Error(fmt::format("corpus: {} line {} {} (use --skip-malformed to skip such lines)",
                                path, c.lines, problem));
      ++c.skipped_malformed;
      continue;
    }
    if (o.max_chars > 0 &&
        (characters(p.source) > o.max_chars || characters(p.target) > o.max_chars)) {
      ++c.skipped_long;
      continue;
    }
    c.pairs.push_back(std::move(p));
  }
  if (c.pairs.empty())
    throw Error(fmt::format("corpus: {} has no usable pairs ({} lines read)", path, c.lines));
  return c;
}

std::string source_key(const std::string& source) {
  std::string key;
  for (const auto& piece : text::pre_tokenize(source, /*lowercase=*/true)) {
    // The space mark says where a word started, which "tom is  here ." and "Tom is here."
    // disagree on; the words themselves decide.
    std::string_view p = piece;
    if (p.starts_with(text::kSpaceMark)) p.remove_prefix(text::kSpaceMark.size());
    key += p;
    key += ' ';
  }
  return key;
}

int64_t held_out_size(int64_t n) { return std::clamp<int64_t>(n / 20, 1, 1000); }

Splits split_by_source(std::vector<Pair> pairs, int64_t valid_size, int64_t test_size,
                       uint64_t seed, const std::string& path, SplitReport* report) {
  // Groups in order of first appearance, so the split depends on the file and the seed only.
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto [it, added] = group_of.try_emplace(source_key(pairs[i].source), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  const auto n = static_cast<int64_t>(pairs.size());
  const auto sources = static_cast<int64_t>(groups.size());
  // At least one source must be left to train on.
  if (sources < (valid_size > 0) + (test_size > 0) + 1)
    throw Error(fmt::format(
        "corpus {} has {} pairs with {} distinct source sentence(s); at least {} are needed to "
        "hold some out (or give --valid and --test files)",
        path, n, sources, (valid_size > 0) + (test_size > 0) + 1));
  Generator g(seed);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[g.next_u32() % i]);
  Splits s;
  SplitReport r{.pairs = n, .sources = sources};
  for (const auto& group : groups)
    if (group.size() > 1) r.repeated_pairs += static_cast<int64_t>(group.size());
  size_t next = 0;
  // Whole groups until the split holds `size` pairs, always leaving one group for training.
  auto take = [&](std::vector<Pair>& into, int64_t size, int64_t& taken) {
    while (static_cast<int64_t>(into.size()) < size && next + 1 < groups.size()) {
      for (size_t i : groups[next]) into.push_back(std::move(pairs[i]));
      ++next, ++taken;
    }
  };
  take(s.test, test_size, r.test_sources);
  take(s.valid, valid_size, r.valid_sources);
  for (; next < groups.size(); ++next)
    for (size_t i : groups[next]) s.train.push_back(std::move(pairs[i]));
  if (report) *report = r;
  return s;
}

Splits split_corpus_by_pair(std::vector<Pair> pairs, uint64_t seed, const std::string& path) {
  const auto n = static_cast<int64_t>(pairs.size());
  const int64_t held = held_out_size(n);
  if (n < 3 * held + 1)
    throw Error(
        fmt::format("corpus {} has only {} pairs; at least {} are needed", path, n, 3 * held + 1));
  return split_pairs(std::move(pairs), held, held, seed);
}

}  // namespace anatomy::data
