#include "data/corpus.hpp"

#include <fmt/format.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <fstream>

#include "autograd/tensor.hpp"

namespace anatomy::data {

namespace {

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
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("corpus: cannot open {}", path));
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
    if (o.max_chars > 0 && (static_cast<int64_t>(p.source.size()) > o.max_chars ||
                            static_cast<int64_t>(p.target.size()) > o.max_chars)) {
      ++c.skipped_long;
      continue;
    }
    c.pairs.push_back(std::move(p));
  }
  if (c.pairs.empty())
    throw Error(fmt::format("corpus: {} has no usable pairs ({} lines read)", path, c.lines));
  return c;
}

Splits split_corpus(std::vector<Pair> pairs, uint64_t seed, const std::string& path) {
  const auto n = static_cast<int64_t>(pairs.size());
  const int64_t held = std::clamp<int64_t>(n / 20, 1, 1000);
  if (n < 3 * held + 1)
    throw Error(
        fmt::format("corpus {} has only {} pairs; at least {} are needed", path, n, 3 * held + 1));
  return split_pairs(std::move(pairs), held, held, seed);
}

}  // namespace anatomy::data
