#include "training/translation_data.hpp"

#include <fmt/format.h>

namespace anatomy::training {

TranslationData read_translation_data(const std::string& task, const std::string& corpus,
                                      uint64_t seed, const data::CorpusOptions& read,
                                      int64_t limit) {
  TranslationData d;
  if (!task.empty()) {
    auto t = data::make_task(task, seed);
    d.splits = std::move(t.splits);
    d.source_tokenizer = t.source_tokenizer;
    d.target_tokenizer = t.target_tokenizer;
    d.description = fmt::format("task {}: {}", task, t.description);
    d.is_task = true;
  } else {
    auto c = data::read_tsv(corpus, read);
    const auto n = static_cast<int64_t>(c.pairs.size());
    d.splits = data::split_corpus(std::move(c.pairs), seed, corpus);
    d.description = fmt::format(
        "corpus {}: {} pairs{}{}", corpus, n,
        c.skipped_malformed ? fmt::format(", {} malformed lines skipped", c.skipped_malformed) : "",
        c.skipped_long ? fmt::format(", {} long pairs dropped", c.skipped_long) : "");
  }
  if (limit > 0 && static_cast<int64_t>(d.splits.train.size()) > limit)
    d.splits.train.resize(limit);
  return d;
}

Encoded encode(const std::vector<data::Pair>& pairs, const text::Tokenizer& s,
               const text::Tokenizer& t) {
  Encoded e;
  for (const auto& p : pairs) {
    auto a = s.encode(p.source), b = t.encode(p.target);
    if (a.empty()) a.push_back(s.vocab().id("[UNK]"));
    e.src.push_back(std::move(a));
    e.tgt.push_back(std::move(b));
    e.sources.push_back(p.source);
    e.references.push_back(p.target);
  }
  return e;
}

size_t drop_too_long(Encoded& e, int64_t max_positions) {
  Encoded fit;
  for (size_t i = 0; i < e.src.size(); ++i)
    if (static_cast<int64_t>(std::max(e.src[i].size(), e.tgt[i].size() + 1)) <= max_positions) {
      fit.src.push_back(e.src[i]);
      fit.tgt.push_back(e.tgt[i]);
      fit.sources.push_back(e.sources[i]);
      fit.references.push_back(e.references[i]);
    }
  const size_t dropped = e.src.size() - fit.src.size();
  e = std::move(fit);
  return dropped;
}

}  // namespace anatomy::training
