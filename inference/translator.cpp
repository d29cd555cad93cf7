#include "inference/translator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "checkpoints/checkpoints.hpp"
#include "data/data.hpp"
#include "generation/generation.hpp"
#include "inference/translation_data.hpp"
#include "kernels/frozen_weights.hpp"
#include "run_folders/run_dir.hpp"

namespace anatomy::training {

Translator Translator::load(const std::string& dir) {
  RunDir run{dir};
  const auto meta = run.read_run("translation");
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
  {
    nn::init::SkipInitGuard skip;  // every parameter is loaded below
    t.model = std::make_shared<models::Seq2SeqTransformer>(t.config);
  }
  // Either attention layout: a folder written by PyTorch (anatomy export) holds the book's.
  checkpoints::load_weights(*t.model, run.weights(), t.config);
  t.model->eval();
  t.default_beam = meta.value("data", nlohmann::json::object()).contains("corpus") ? 4 : 1;
  if (meta.contains("decoding")) {  // chosen on validation at the end of training
    t.default_beam = meta["decoding"]["beam"].get<int64_t>();
    t.default_length_penalty = meta["decoding"]["length_penalty"].get<float>();
  }
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
  std::vector<std::string> out;
  for (const auto& tokens : translate_ids(texts, beam, length_penalty, max_length))
    out.push_back(target->decode(tokens));
  return out;
}

std::vector<std::vector<int64_t>> Translator::translate_ids(const std::vector<std::string>& texts,
                                                            int64_t beam, float length_penalty,
                                                            int64_t max_length) const {
  std::vector<std::vector<int64_t>> out(texts.size());
  if (texts.empty()) return out;  // nothing to decode, so no memory to check
  std::vector<std::vector<int64_t>> ids;
  for (const auto& t : texts) ids.push_back(encode_source(t));
  auto limit = [&](size_t i) {
    const int64_t want = max_length > 0 ? max_length : static_cast<int64_t>(ids[i].size()) * 2 + 10;
    return std::min<int64_t>(want, config.max_position_embeddings - 1);
  };
  // Sentences of similar length decode together (less padding), up to 256 rows of the
  // decoder's batch at a time: a sentence is one row in greedy decoding and `beam` rows in beam
  // search. A step's cost is mostly reading the weights (the output layer's most), whatever
  // the rows, so bigger batches pay it for more sentences. Longest first: the later, shorter
  // batches then fit in the buffers the first one left in the allocator's cache.
  const size_t per_batch =
      static_cast<size_t>(std::max<int64_t>(1, 256 / std::max<int64_t>(beam, 1)));
  // What decoding holds at once, from the beam and the lengths, before any of it is allocated.
  int64_t longest_source = 0, longest_output = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    longest_source = std::max<int64_t>(longest_source, static_cast<int64_t>(ids[i].size()));
    longest_output = std::max(longest_output, limit(i));
  }
  const int64_t rows =
      std::max<int64_t>(beam, 1) * static_cast<int64_t>(std::min(per_batch, texts.size()));
  const double bytes =
      4 * config.parameter_count() + config.decoding_bytes(rows, longest_source, longest_output);
  if (bytes > models::TransformerConfig::memory_limit())
    throw Error(fmt::format(
        "translate: about {:.1f} GB to decode {} hypotheses at once (beam {}) of up to {} tokens "
        "from sources of up to {}: more than the {:.1f} GB this process may use (lower --beam or "
        "--max-length, or raise --max-memory GB)",
        bytes / (1 << 30), rows, beam, longest_output, longest_source,
        models::TransformerConfig::memory_limit() / (1 << 30)));
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });
  FrozenWeightsGuard frozen;  // every batch's decoding reads the weights packed once
  for (size_t start = 0; start < order.size(); start += per_batch) {
    const size_t end = std::min(order.size(), start + per_batch);
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> limits;
    for (size_t k = start; k < end; ++k) {
      rows.push_back(ids[order[k]]);
      limits.push_back(limit(order[k]));
    }
    const Tensor batch = data::pad_batch(rows, config.pad_token_id);
    const auto results =
        beam <= 1 ? generation::greedy_decode(*model, batch, bos, eos, limits)
                  : generation::beam_search(*model, batch, bos, eos, limits,
                                            {.beam_size = beam, .length_penalty = length_penalty});
    for (size_t k = start; k < end; ++k) out[order[k]] = results[k - start].tokens;
  }
  return out;
}

DecodingChoice choose_decoding(const Translator& tr, const std::vector<data::Pair>& pairs,
                               const std::vector<float>& penalties) {
  std::vector<std::string> sources, refs;
  for (const auto& p : pairs) sources.push_back(p.source), refs.push_back(p.target);
  auto bleu = [&](int64_t beam, float penalty) {
    return data::corpus_bleu(tr.translate(sources, beam, penalty), {refs}).score;
  };
  DecodingChoice c;
  c.greedy_bleu = bleu(1, 0.6f);
  c.tried.emplace_back(1, 0.6f, c.greedy_bleu);
  c.beam_bleu = -1;
  float best_penalty = penalties.empty() ? 0.6f : penalties[0];
  for (const float penalty : penalties) {
    const double b = bleu(4, penalty);
    c.tried.emplace_back(4, penalty, b);
    if (b > c.beam_bleu) c.beam_bleu = b, best_penalty = penalty;
  }
  // Beam search costs about `beam` times greedy's work: it is the default only where it is at
  // least as good.
  if (!penalties.empty() && c.beam_bleu >= c.greedy_bleu) {
    c.beam = 4;
    c.length_penalty = best_penalty;
  } else {
    c.beam = 1;
    c.length_penalty = best_penalty;  // what --beam N uses when asked for
    c.beam_bleu = std::max(c.beam_bleu, 0.0);
  }
  return c;
}

Tensor translation_loss(models::Seq2SeqTransformer& model, const data::Batch& b, float smoothing,
                        const std::string& reduction) {
  Tensor logits = model.forward(b.source, b.target_in);  // [B, T, V]
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), b.target_out.reshape({-1}),
                       {.ignore_index = 0, .label_smoothing = smoothing, .reduction = reduction});
}

Metrics validate(Translator& tr, const Encoded& valid, int64_t max_tokens) {
  NoGradGuard no_grad;
  FrozenWeightsGuard frozen;  // the batches only read the weights: each is packed once
  tr.model->eval();
  double loss_sum = 0;
  int64_t tokens = 0;
  for (const auto& b :
       data::make_batches(valid.src, valid.tgt, {.max_tokens = max_tokens, .shuffle = false})) {
    loss_sum += translation_loss(*tr.model, b, 0.0f, "sum").item<double>();
    tokens += b.target_tokens;
  }
  const auto hyps = tr.translate(valid.sources);
  int64_t exact = 0;
  for (size_t i = 0; i < hyps.size(); ++i)
    exact += hyps[i] == tr.target->decode(tr.target->encode(valid.references[i]));
  Metrics m;
  m["valid_loss"] = loss_sum / static_cast<double>(std::max<int64_t>(tokens, 1));
  m["bleu"] = data::corpus_bleu(hyps, {valid.references}).score;
  m["exact_match"] =
      100.0 * static_cast<double>(exact) / static_cast<double>(std::max<size_t>(hyps.size(), 1));
  return m;
}

std::function<bool(const Metrics&, const Metrics&)> better_by(const std::string& select) {
  // A metric missing from one side counts as its worst: a resumed run's best comes from run.json,
  // whose metrics are checked for type, not for presence.
  auto lower_loss = [](const Metrics& a, const Metrics& b) {
    return a.value("valid_loss", INFINITY) < b.value("valid_loss", INFINITY);
  };
  if (select == "loss") return lower_loss;
  auto higher = [](const Metrics& a, const Metrics& b, const char* key) -> std::optional<bool> {
    const double x = a.value(key, -INFINITY), y = b.value(key, -INFINITY);
    if (x == y) return std::nullopt;
    return x > y;
  };
  if (select == "bleu")
    return [lower_loss, higher](const Metrics& a, const Metrics& b) {
      return higher(a, b, "bleu").value_or(lower_loss(a, b));
    };
  if (select == "exact_match")
    return [lower_loss, higher](const Metrics& a, const Metrics& b) {
      for (const char* key : {"exact_match", "bleu"})
        if (const auto h = higher(a, b, key)) return *h;
      return lower_loss(a, b);
    };
  throw Error(fmt::format("unknown --select '{}' (bleu, loss or exact_match)", select));
}

std::string describe_select(const std::string& select) {
  if (select == "exact_match") return "validation exact match";
  return "validation " + (select == "bleu" ? std::string("BLEU") : select);
}

}  // namespace anatomy::training
