#include "generation/generation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include "kernels/frozen_weights.hpp"
#include "kernels/parallel.hpp"

namespace anatomy::generation {

using namespace anatomy::models;

namespace {

// Keeps cached keys/values of the rows in `rows` (beam search reorders its hypotheses).
void reorder(DecoderCache& cache, const Tensor& rows) {
  for (auto* list : {&cache.self_attention, &cache.cross_attention})
    for (auto& kv : *list)
      if (kv.key.defined()) {
        kv.key = index_select(kv.key, 0, rows);
        kv.value = index_select(kv.value, 0, rows);
      }
}

Tensor last_position(const Tensor& logits) { return logits.select(1, logits.size(1) - 1); }

// The k best extensions of one beam, best first: scores base + logp[v], ties to the smaller
// token. One pass that keeps a short sorted list: almost every token scores below the list's
// last and costs one comparison.
void best_extensions(const float* logp, int64_t V, float base, int64_t k,
                     std::vector<std::pair<float, int64_t>>& top) {
  top.clear();
  for (int64_t v = 0; v < V; ++v) {
    const float score = base + logp[v];
    if (static_cast<int64_t>(top.size()) == k && !(score > top.back().first)) continue;
    // After every entry of an equal score: those have smaller tokens.
    const auto at = std::upper_bound(top.begin(), top.end(), score,
                                     [](float s, const auto& e) { return s > e.first; });
    top.insert(at, {score, v});
    if (static_cast<int64_t>(top.size()) > k) top.pop_back();
  }
}

}  // namespace

std::vector<Generated> greedy_decode(Seq2SeqTransformer& model, const Tensor& source_ids,
                                     int64_t bos, int64_t eos, int64_t max_length,
                                     const GreedyOptions& o) {
  const int64_t B = source_ids.dim() == 2 ? source_ids.size(0) : 0;
  return greedy_decode(model, source_ids, bos, eos,
                       std::vector<int64_t>(static_cast<size_t>(B), max_length), o);
}

std::vector<Generated> greedy_decode(Seq2SeqTransformer& model, const Tensor& source_ids,
                                     int64_t bos, int64_t eos,
                                     const std::vector<int64_t>& max_lengths,
                                     const GreedyOptions& o) {
  if (source_ids.dim() != 2)
    throw Error(
        fmt::format("greedy_decode: expected source ids [B, S], got {}", source_ids.shape().str()));
  if (static_cast<int64_t>(max_lengths.size()) != source_ids.size(0))
    throw Error(fmt::format("greedy_decode: {} source rows but {} max lengths", source_ids.size(0),
                            max_lengths.size()));
  NoGradGuard no_grad;
  FrozenWeightsGuard frozen;  // the steps only read the model: each weight is packed once
  const bool use_cache = o.use_cache && model.decoder->has_kv_cache();
  const int64_t B = source_ids.size(0);
  auto encoded = model.encode(source_ids);
  Tensor memory = encoded.first, source_mask = encoded.second;
  std::vector<Generated> out(B);
  // The decoder's batch: its rows' sentences, and which of them have ended. Ended rows leave the
  // batch (and their keys and values the cache) once an eighth of it has ended. Leaving at once
  // would copy the whole cache at almost every step of a big batch; staying costs a row's
  // compute for a few steps. Without a cache every row feeds its whole prefix, so the prefixes
  // must stay equal in length: ended rows leave at once.
  std::vector<int64_t> rows(B);
  std::iota(rows.begin(), rows.end(), 0);
  // A row also ends at its longest output (one with none ends before the first step).
  std::vector<char> ended(static_cast<size_t>(B), 0);
  int64_t ended_in_batch = 0, longest = 0;
  for (int64_t r = 0; r < B; ++r) {
    longest = std::max(longest, max_lengths[r]);
    if (max_lengths[r] < 1) ended[r] = 1, ++ended_in_batch;
  }
  DecoderCache cache;
  for (int64_t step = 0; step < longest && !rows.empty(); ++step) {
    const int64_t n = static_cast<int64_t>(rows.size());
    // With a cache each row feeds its newest token ([n, 1]); without, its whole prefix.
    std::vector<int64_t> feed;
    for (const int64_t r : rows) {
      if (use_cache) {
        feed.push_back(ended[r] || out[r].tokens.empty() ? bos : out[r].tokens.back());
      } else {
        feed.push_back(bos);
        feed.insert(feed.end(), out[r].tokens.begin(), out[r].tokens.end());
      }
    }
    const Tensor ids = from_vector(feed, {n, use_cache ? 1 : step + 1});
    const Tensor logits =
        last_position(model.decode(ids, memory, source_mask, use_cache ? &cache : nullptr));
    const auto next = argmax(logits, -1).to_int_vector();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = rows[i];
      if (ended[r]) continue;
      if (o.output_scores) out[r].logits.push_back(logits.select(0, i).clone());
      if (next[i] == eos) {
        ended[r] = 1;
        ++ended_in_batch;
      } else {
        out[r].tokens.push_back(next[i]);
        if (static_cast<int64_t>(out[r].tokens.size()) >= max_lengths[r])
          ended[r] = 1, ++ended_in_batch;
      }
    }
    if (ended_in_batch == n) break;
    if (ended_in_batch < (use_cache ? std::max<int64_t>(1, n / 8) : 1)) continue;
    std::vector<int64_t> keep;  // positions in `rows` of the rows that go on
    for (int64_t i = 0; i < n; ++i)
      if (!ended[rows[i]]) keep.push_back(i);
    const Tensor index = from_vector(keep, {static_cast<int64_t>(keep.size())});
    memory = index_select(memory, 0, index);
    source_mask = index_select(source_mask, 0, index);
    if (use_cache) reorder(cache, index);
    std::vector<int64_t> still;
    for (const int64_t i : keep) still.push_back(rows[i]);
    rows = std::move(still);
    ended_in_batch = 0;
  }
  return out;
}

namespace {

// One hypothesis of a sentence: its tokens and their summed log-probability.
struct Hypothesis {
  std::vector<int64_t> tokens;
  float logp;
  bool ended = false;  // closed by the end token (which then counts in the length)
};

// A beam extended by one token: (score, token, beam).
using Candidate = std::tuple<float, int64_t, int64_t>;

// Best first; ties: the smaller token, then the earlier beam. A lambda, so that partial_sort
// inlines it.
constexpr auto better = [](const Candidate& a, const Candidate& b) {
  return std::get<0>(a) > std::get<0>(b) ||
         (std::get<0>(a) == std::get<0>(b) && std::make_pair(std::get<1>(a), std::get<2>(a)) <
                                                  std::make_pair(std::get<1>(b), std::get<2>(b)));
};

// Beam search over a batch of sentences. Each sentence has its open beams and its finished
// hypotheses; the open beams of all sentences still searching are the rows of one decoder batch,
// sentence after sentence. A step expands every row by every token, prunes each sentence's
// candidates to its next beams, and finishes the sentences that are done.
class BeamSearch {
 public:
  BeamSearch(Seq2SeqTransformer& model, const Tensor& source_ids, int64_t bos, int64_t eos,
             const std::vector<int64_t>& max_lengths, const BeamSearchOptions& o)
      : model_(model),
        bos_(bos),
        eos_(eos),
        max_lengths_(max_lengths),
        o_(o),
        use_cache_(o.use_cache && model.decoder->has_kv_cache()),
        beams_(source_ids.size(0), std::vector<Hypothesis>{{{}, 0.0f}}),
        finished_(source_ids.size(0)),
        out_(source_ids.size(0)) {
    std::tie(memory_, source_mask_) = model.encode(source_ids);
  }

  std::vector<Generated> run() {
    for (int64_t s = 0; s < static_cast<int64_t>(out_.size()); ++s) {
      if (max_lengths_[s] < 1)
        finish(s);
      else
        row_sentence_.push_back(s);
    }
    if (!row_sentence_.empty()) take_rows(row_sentence_);
    last_.assign(row_sentence_.size(), bos_);
    for (int64_t step = 0; !row_sentence_.empty(); ++step) {
      const auto row_best = expand(step);
      NextBatch next;
      const int64_t n = static_cast<int64_t>(row_sentence_.size());
      for (int64_t first = 0; first < n;) {
        const int64_t s = row_sentence_[first];
        const int64_t nb = static_cast<int64_t>(beams_[s].size());
        prune(s, first, step, row_best, next);
        first += nb;
      }
      row_sentence_ = std::move(next.sentence);
      last_ = std::move(next.last);
      if (!row_sentence_.empty()) take_rows(next.rows);
    }
    return std::move(out_);
  }

 private:
  // Each row's best extensions (score, token), best first.
  using Extensions = std::vector<std::vector<std::pair<float, int64_t>>>;

  // The decoder batch of the next step: for each open beam, its row of this step, its sentence
  // and its newest token.
  struct NextBatch {
    std::vector<int64_t> rows, sentence, last;
  };

  float normalized(const Hypothesis& h) const {
    const double len = static_cast<double>(h.tokens.size() + (h.ended ? 1 : 0));
    return o_.length_penalty == 0.0f
               ? h.logp
               : static_cast<float>(h.logp / std::pow((5.0 + len) / 6.0, o_.length_penalty));
  }

  // The decoder's input: with a cache each row's newest token ([n, 1]); without, the whole
  // prefix of every row, recomputed ([n, step + 1]).
  Tensor decoder_input(int64_t step) const {
    const int64_t n = static_cast<int64_t>(row_sentence_.size());
    if (use_cache_) return from_vector(last_, {n, 1});
    std::vector<int64_t> prefix;
    for (int64_t r = 0, s = -1, b = 0; r < n; ++r) {
      b = row_sentence_[r] == s ? b + 1 : 0;
      s = row_sentence_[r];
      prefix.push_back(bos_);
      prefix.insert(prefix.end(), beams_[s][b].tokens.begin(), beams_[s][b].tokens.end());
    }
    return from_vector(prefix, {n, step + 1});
  }

  // Candidates: every beam extended by every token. Only a row's own best 2·beam can be among
  // its sentence's best 2·beam, which are enough to fill the beams after removing the ones that
  // ended. The rows find theirs in parallel.
  Extensions expand(int64_t step) {
    const int64_t n = static_cast<int64_t>(row_sentence_.size());
    const auto lp =
        log_softmax(last_position(model_.decode(decoder_input(step), memory_rows_, mask_rows_,
                                                use_cache_ ? &cache_ : nullptr)),
                    -1)
            .to_vector();  // [n, V]
    const int64_t V = static_cast<int64_t>(lp.size()) / n;
    const int64_t keep = 2 * o_.beam_size;
    std::vector<float> base(n);
    for (int64_t r = 0, b = 0; r < n; ++r) {
      b = r > 0 && row_sentence_[r] == row_sentence_[r - 1] ? b + 1 : 0;
      base[r] = beams_[row_sentence_[r]][b].logp;
    }
    Extensions row_best(n);
    parallel_for(n, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        best_extensions(lp.data() + r * V, V, base[r], std::min(keep, V), row_best[r]);
    });
    return row_best;
  }

  // Sentence s's next beams: the best candidates of its rows (first, first + 1, ...), best first,
  // those that end set aside as finished; the sentence finishes when it is done.
  void prune(int64_t s, int64_t first, int64_t step, const Extensions& row_best, NextBatch& batch) {
    const int64_t nb = static_cast<int64_t>(beams_[s].size());
    candidates_.clear();
    for (int64_t b = 0; b < nb; ++b)
      for (const auto& [score, v] : row_best[first + b]) candidates_.emplace_back(score, v, b);
    const int64_t k = std::min<int64_t>(2 * o_.beam_size, static_cast<int64_t>(candidates_.size()));
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), better);
    std::vector<Hypothesis> next;
    for (int64_t i = 0; i < k && static_cast<int64_t>(next.size()) < o_.beam_size; ++i) {
      const auto [score, v, b] = candidates_[i];
      if (v == eos_) {
        add_finished(s, {beams_[s][b].tokens, score, true});
        continue;
      }
      Hypothesis h{beams_[s][b].tokens, score, false};
      h.tokens.push_back(v);
      next.push_back(std::move(h));
      batch.rows.push_back(first + b);
      batch.last.push_back(v);
    }
    const bool full = has_enough_ended(s, next);
    if (full || next.empty() || step + 1 >= max_lengths_[s]) {
      batch.rows.resize(batch.rows.size() - next.size());
      batch.last.resize(batch.last.size() - next.size());
      beams_[s] = full ? std::vector<Hypothesis>{} : std::move(next);
      finish(s);
    } else {
      batch.sentence.insert(batch.sentence.end(), next.size(), s);
      beams_[s] = std::move(next);
    }
  }

  // Keeps the beam_size best ended hypotheses of sentence s (with early stopping, the first).
  void add_finished(int64_t s, Hypothesis ended) {
    auto& done = finished_[s];
    if (static_cast<int64_t>(done.size()) < o_.beam_size) {
      done.push_back(std::move(ended));
    } else if (!o_.early_stopping) {  // it replaces the worst ended one if it beats it
      auto worst = std::min_element(done.begin(), done.end(), [&](const auto& x, const auto& y) {
        return normalized(x) < normalized(y);
      });
      if (normalized(ended) > normalized(*worst)) *worst = std::move(ended);
    }
  }

  // Once beam_size hypotheses have ended, a sentence stops (early stopping), or goes on while an
  // open beam, scored at its present length, still beats the worst ended one: a longer sentence
  // may yet end better (docs/training.md compares the two). When it stops, the open beams do not
  // compete: cut short, their log-probability lacks the terms of the tokens still to come, which
  // would make a half sentence look better than every finished one.
  bool has_enough_ended(int64_t s, const std::vector<Hypothesis>& open) const {
    bool full = static_cast<int64_t>(finished_[s].size()) >= o_.beam_size;
    if (full && !o_.early_stopping && !open.empty()) {
      float worst = INFINITY, best_open = -INFINITY;
      for (const auto& h : finished_[s]) worst = std::min(worst, normalized(h));
      for (const auto& h : open) best_open = std::max(best_open, normalized(h));
      full = best_open <= worst;
    }
    return full;
  }

  // The best of sentence s's hypotheses becomes its output; open beams count as cut short.
  void finish(int64_t s) {
    for (auto& h : beams_[s]) finished_[s].push_back(std::move(h));
    beams_[s].clear();
    const Hypothesis* best = nullptr;
    float best_score = -INFINITY;
    for (const auto& h : finished_[s]) {
      const float score = normalized(h);
      if (!best || score > best_score) best = &h, best_score = score;
    }
    if (best) out_[s].tokens = best->tokens, out_[s].score = best_score;
  }

  // The encoder's output and mask, and the cache, for the decoder rows `rows` (at the first
  // step, rows are sentences).
  void take_rows(const std::vector<int64_t>& rows) {
    const Tensor index = from_vector(rows, {static_cast<int64_t>(rows.size())});
    if (!memory_rows_.defined()) {
      memory_rows_ = index_select(memory_, 0, index);
      mask_rows_ = index_select(source_mask_, 0, index);
      return;
    }
    memory_rows_ = index_select(memory_rows_, 0, index);
    mask_rows_ = index_select(mask_rows_, 0, index);
    if (use_cache_) reorder(cache_, index);
  }

  Seq2SeqTransformer& model_;
  const int64_t bos_, eos_;
  const std::vector<int64_t>& max_lengths_;
  const BeamSearchOptions& o_;
  const bool use_cache_;
  Tensor memory_, source_mask_;                    // the encoder's, one row per sentence
  std::vector<std::vector<Hypothesis>> beams_;     // each sentence's open beams
  std::vector<std::vector<Hypothesis>> finished_;  // and its finished hypotheses
  std::vector<Generated> out_;
  std::vector<int64_t> row_sentence_;  // which sentence each decoder row belongs to
  std::vector<int64_t> last_;          // each row's newest token
  DecoderCache cache_;
  Tensor memory_rows_, mask_rows_;     // the encoder's output and mask, one row per decoder row
  std::vector<Candidate> candidates_;  // one sentence's, kept to reuse its memory
};

}  // namespace

std::vector<Generated> beam_search(Seq2SeqTransformer& model, const Tensor& source_ids, int64_t bos,
                                   int64_t eos, const std::vector<int64_t>& max_lengths,
                                   const BeamSearchOptions& o) {
  if (source_ids.dim() != 2)
    throw Error(
        fmt::format("beam_search: expected source ids [B, S], got {}", source_ids.shape().str()));
  const int64_t B = source_ids.size(0);
  if (static_cast<int64_t>(max_lengths.size()) != B)
    throw Error(
        fmt::format("beam_search: {} source rows but {} max lengths", B, max_lengths.size()));
  if (o.beam_size < 1)
    throw Error(fmt::format("beam_search: beam size must be >= 1 (got {})", o.beam_size));
  NoGradGuard no_grad;
  FrozenWeightsGuard frozen;
  return BeamSearch(model, source_ids, bos, eos, max_lengths, o).run();
}

Generated beam_search(Seq2SeqTransformer& model, const Tensor& source_ids, int64_t bos, int64_t eos,
                      int64_t max_length, int64_t beam_size, float length_penalty) {
  if (source_ids.dim() != 2 || source_ids.size(0) != 1)
    throw Error(fmt::format("beam_search: expected one source row [1, S], got {}",
                            source_ids.shape().str()));
  return beam_search(model, source_ids, bos, eos, {max_length},
                     {.beam_size = beam_size, .length_penalty = length_penalty})[0];
}

Generated generate(TransformerForCausalLM& model, const std::vector<int64_t>& prompt,
                   int64_t max_new_tokens, const SamplingOptions& o, int64_t stop_id) {
  if (prompt.empty()) throw Error("generate: the prompt is empty");
  if (o.temperature < 0 || o.top_p <= 0 || o.top_p > 1 || o.top_k < 0)
    throw Error(
        fmt::format("generate: need temperature >= 0, 0 < top_p <= 1, top_k >= 0 (got {}, "
                    "{}, {})",
                    o.temperature, o.top_p, o.top_k));
  NoGradGuard no_grad;
  const int64_t max_pos = model.decoder->embeddings->max_positions;
  std::vector<int64_t> seq = prompt;
  Generated out;
  DecoderCache cache;
  auto& gen = default_generator();
  const bool use_cache = o.use_cache && model.decoder->has_kv_cache();
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    Tensor logits;
    if (use_cache && static_cast<int64_t>(seq.size()) <= max_pos) {
      std::vector<int64_t> feed(seq.begin() + cache.length, seq.end());
      logits = model.forward(from_vector(feed, {1, static_cast<int64_t>(feed.size())}), &cache);
    } else {
      // Past the model's positions: slide a window over the last max_pos tokens (no cache).
      const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(seq.size()) - max_pos);
      std::vector<int64_t> window(seq.begin() + start, seq.end());
      logits = model.forward(from_vector(window, {1, static_cast<int64_t>(window.size())}));
    }
    Tensor last = logits.select(0, 0).select(0, logits.size(1) - 1);  // [V]
    int64_t next;
    if (o.temperature == 0.0f) {
      next = argmax(last).item<int64_t>();
      out.logits.push_back(last.clone());
    } else {
      std::vector<float> p = softmax(last / o.temperature, -1).to_vector();
      std::vector<int64_t> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      // Most likely first; equal probabilities keep the smaller token first (as beam search's
      // ties), so that top-k keeps the same tokens on every run and every library.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      // Keep the top-k, then the smallest prefix whose mass reaches top_p.
      size_t keep = o.top_k > 0 ? std::min<size_t>(order.size(), o.top_k) : order.size();
      double mass = 0;
      for (size_t i = 0; i < keep; ++i) {
        mass += p[order[i]];
        if (mass >= o.top_p) {
          keep = i + 1;
          break;
        }
      }
      double total = 0;
      for (size_t i = 0; i < keep; ++i) total += p[order[i]];
      double u = gen.uniform() * total;
      next = order[keep - 1];
      for (size_t i = 0; i < keep; ++i) {
        u -= p[order[i]];
        if (u < 0) {
          next = order[i];
          break;
        }
      }
    }
    if (next == stop_id) break;
    seq.push_back(next);
    out.tokens.push_back(next);
    if (use_cache && static_cast<int64_t>(seq.size()) > max_pos) cache = DecoderCache();
  }
  return out;
}

}  // namespace anatomy::generation
