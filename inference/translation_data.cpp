#include "inference/translation_data.hpp"

#include <fmt/format.h>

#include <tuple>
#include <unordered_set>

namespace anatomy::training {

nlohmann::json DataSpec::to_json() const {
  if (!task.empty()) return {{"task", task}};
  nlohmann::json d = {{"corpus", corpus},
                      {"max_chars", read.max_chars},
                      {"skip_malformed", read.skip_malformed},
                      {"split", split}};
  if (!valid.empty()) d["valid"] = valid;
  if (!test.empty()) d["test"] = test;
  if (reverse) d["reverse"] = true;
  return d;
}

DataSpec DataSpec::from_json(const nlohmann::json& d) {
  DataSpec s;
  s.task = d.value("task", "");
  s.corpus = d.value("corpus", "");
  s.valid = d.value("valid", "");
  s.test = d.value("test", "");
  s.reverse = d.value("reverse", false);
  s.read = {.max_chars = d.value("max_chars", int64_t{0}),
            .skip_malformed = d.value("skip_malformed", false)};
  s.split = d.value("split", "pair");
  if (s.split != "source" && s.split != "pair")
    throw Error(fmt::format("run.json: 'data.split' is '{}' (expected source or pair)", s.split));
  return s;
}

namespace {

data::Corpus read_pairs(const std::string& path, const DataSpec& spec) {
  auto c = data::read_tsv(path, spec.read);
  if (spec.reverse)
    for (auto& p : c.pairs) std::swap(p.source, p.target);
  return c;
}

std::string skipped(const data::Corpus& c) {
  return fmt::format(
      "{}{}",
      c.skipped_malformed ? fmt::format(", {} malformed lines skipped", c.skipped_malformed) : "",
      c.skipped_long ? fmt::format(", {} long pairs dropped", c.skipped_long) : "");
}

}  // namespace

TranslationData read_translation_data(const DataSpec& spec, uint64_t seed, int64_t limit) {
  TranslationData d;
  if (!spec.task.empty()) {
    auto t = data::make_task(spec.task, seed);
    d.splits = std::move(t.splits);
    d.source_tokenizer = t.source_tokenizer;
    d.target_tokenizer = t.target_tokenizer;
    d.description = fmt::format("task {}: {}", spec.task, t.description);
    d.is_task = true;
  } else {
    auto c = read_pairs(spec.corpus, spec);
    const auto n = static_cast<int64_t>(c.pairs.size());
    d.description =
        fmt::format("corpus {}{}: {} pairs{}", spec.corpus,
                    spec.reverse ? " (reversed: second column -> first)" : "", n, skipped(c));
    if (spec.split == "pair") {
      d.splits = data::split_corpus_by_pair(std::move(c.pairs), seed, spec.corpus);
      d.report.push_back(
          "held-out pairs shuffled one by one (a run from before the split by source)");
    } else {
      const int64_t held = data::held_out_size(n);
      data::SplitReport r;
      d.splits = data::split_by_source(std::move(c.pairs), spec.valid.empty() ? held : 0,
                                       spec.test.empty() ? held : 0, seed, spec.corpus, &r);
      d.report.push_back(fmt::format(
          "{} distinct source sentences; {} pairs share their source with another (all kept, "
          "each source in one split only)",
          r.sources, r.repeated_pairs));
      // The user's own held-out files: kept whole, and checked against what is trained on.
      std::unordered_set<std::string> trained;
      for (const auto& p : d.splits.train) trained.insert(data::source_key(p.source));
      for (const auto& [path, into, name, sources] :
           {std::tuple{&spec.valid, &d.splits.valid, "valid", r.valid_sources},
            std::tuple{&spec.test, &d.splits.test, "test", r.test_sources}}) {
        if (path->empty()) {
          d.report.push_back(fmt::format("{}: {} pairs ({} sources) cut from the corpus", name,
                                         into->size(), sources));
          continue;
        }
        auto held_file = read_pairs(*path, spec);
        *into = std::move(held_file.pairs);
        int64_t seen = 0;
        for (const auto& p : *into) seen += trained.count(data::source_key(p.source));
        d.report.push_back(fmt::format(
            "{}: {} pairs from {}{}{}", name, into->size(), *path, skipped(held_file),
            seen ? fmt::format("; warning: {} of their sources are also in the training corpus",
                               seen)
                 : ""));
      }
    }
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

std::vector<data::Batch> epoch_batches(const Encoded& train, int64_t max_tokens, uint64_t seed,
                                       int64_t epoch) {
  // 1000003, a prime above any run's epoch count, keeps one seed's epochs from meeting another's.
  return data::make_batches(
      train.src, train.tgt,
      {.max_tokens = max_tokens, .seed = seed * 1000003 + static_cast<uint64_t>(epoch)});
}

}  // namespace anatomy::training
