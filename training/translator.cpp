#include "training/translator.hpp"

#include <fmt/format.h>

#include <numeric>

#include "data/data.hpp"
#include "training/run_dir.hpp"

namespace anatomy::training {

Translator Translator::load(const std::string& dir) {
  RunDir run{dir};
  run.read_run("translation");
  Translator t;
  t.config = run.read_config();
  t.source = text::load_tokenizer(run.file("source_tokenizer"));
  t.target = text::load_tokenizer(run.file("target_tokenizer"));
  if (t.source->vocab().size() != t.config.vocab_size ||
      t.target->vocab().size() != t.config.target_vocab())
    throw Error(
        fmt::format("{}: the tokenizers ({} and {} tokens) do not match config.json ({} and {})",
                    dir, t.source->vocab().size(), t.target->vocab().size(), t.config.vocab_size,
                    t.config.target_vocab()));
  t.model = std::make_shared<models::Seq2SeqTransformer>(t.config);
  // Either attention layout: a folder written by PyTorch (anatomy export) holds the book's.
  models::load_weights(*t.model, run.weights(), t.config);
  t.model->eval();
  t.bos = t.target->vocab().id("[BOS]");
  t.eos = t.target->vocab().id("[EOS]");
  return t;
}

std::vector<int64_t> Translator::encode_source(const std::string& text) const {
  auto ids = source->encode(text);
  if (ids.empty()) ids.push_back(source->vocab().id("[UNK]"));
  if (static_cast<int64_t>(ids.size()) > config.max_position_embeddings)
    throw Error(fmt::format("the input \"{}\" is {} tokens long; this model reads at most {}",
                            text.size() > 40 ? text.substr(0, 40) + "..." : text, ids.size(),
                            config.max_position_embeddings));
  return ids;
}

std::vector<std::string> Translator::translate(const std::vector<std::string>& texts, int64_t beam,
                                               float length_penalty, int64_t max_length) const {
  std::vector<std::string> out(texts.size());
  std::vector<std::vector<int64_t>> ids;
  for (const auto& t : texts) ids.push_back(encode_source(t));
  auto limit = [&](size_t i) {
    const int64_t want = max_length > 0 ? max_length : static_cast<int64_t>(ids[i].size()) * 2 + 10;
    return std::min<int64_t>(want, config.max_position_embeddings - 1);
  };
  if (beam <= 1) {
    // Greedy, in batches of sentences of similar length.
    std::vector<size_t> order(texts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
    for (size_t start = 0; start < order.size(); start += 64) {
      const size_t end = std::min(order.size(), start + 64);
      std::vector<std::vector<int64_t>> rows;
      int64_t max_len = 0;
      for (size_t k = start; k < end; ++k) {
        rows.push_back(ids[order[k]]);
        max_len = std::max(max_len, limit(order[k]));
      }
      auto results = models::greedy_decode(*model, data::pad_batch(rows, config.pad_token_id), bos,
                                           eos, max_len);
      for (size_t k = start; k < end; ++k)
        out[order[k]] = target->decode(results[k - start].tokens);
    }
    return out;
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto g =
        models::beam_search(*model, from_vector(ids[i], {1, static_cast<int64_t>(ids[i].size())}),
                            bos, eos, limit(i), beam, length_penalty);
    out[i] = target->decode(g.tokens);
  }
  return out;
}

}  // namespace anatomy::training
