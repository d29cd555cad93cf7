#include "generation/generation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
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
  const bool use_cache = o.use_cache && model.decoder->has_kv_cache();
  const auto encoded = model.encode(source_ids);
  const Tensor &memory = encoded.first, &source_mask = encoded.second;
  struct Hyp {
    std::vector<int64_t> tokens;
    float logp;
    bool ended = false;  // closed by the end token (which then counts in the length)
  };
  auto normalized = [&](const Hyp& h) {
    const double len = static_cast<double>(h.tokens.size() + (h.ended ? 1 : 0));
    return o.length_penalty == 0.0f
               ? h.logp
               : static_cast<float>(h.logp / std::pow((5.0 + len) / 6.0, o.length_penalty));
  };
  // Each sentence's open beams and finished hypotheses. The open beams of all sentences still
  // searching are the rows of one decoder batch, sentence after sentence.
  std::vector<std::vector<Hyp>> beams(B, std::vector<Hyp>{{{}, 0.0f}});
  std::vector<std::vector<Hyp>> finished(B);
  std::vector<Generated> out(B);
  auto finish = [&](int64_t s) {  // the best of sentence s's hypotheses becomes its output
    for (auto& h : beams[s]) finished[s].push_back(std::move(h));  // still open: cut short
    beams[s].clear();
    const Hyp* best = nullptr;
    float best_score = -INFINITY;
    for (const auto& h : finished[s]) {
      const float score = normalized(h);
      if (!best || score > best_score) best = &h, best_score = score;
    }
    if (best) out[s].tokens = best->tokens, out[s].score = best_score;
  };
  std::vector<int64_t> row_sentence;  // which sentence each decoder row belongs to
  for (int64_t s = 0; s < B; ++s) {
    if (max_lengths[s] < 1)
      finish(s);
    else
      row_sentence.push_back(s);
  }
  DecoderCache cache;
  Tensor memory_rows, mask_rows;  // the encoder's output and mask, one row per decoder row
  auto take_rows = [&](const std::vector<int64_t>& rows) {
    const Tensor index = from_vector(rows, {static_cast<int64_t>(rows.size())});
    if (!memory_rows.defined()) {  // the first step: rows are sentences
      memory_rows = index_select(memory, 0, index);
      mask_rows = index_select(source_mask, 0, index);
      return;
    }
    memory_rows = index_select(memory_rows, 0, index);
    mask_rows = index_select(mask_rows, 0, index);
    if (use_cache) reorder(cache, index);
  };
  if (!row_sentence.empty()) take_rows(row_sentence);
  std::vector<int64_t> last(row_sentence.size(), bos);  // each row's newest token
  for (int64_t step = 0; !row_sentence.empty(); ++step) {
    const int64_t n = static_cast<int64_t>(row_sentence.size());
    Tensor ids;
    if (use_cache) {
      ids = from_vector(last, {n, 1});
    } else {  // the whole prefix of every row, recomputed
      std::vector<int64_t> prefix;
      for (int64_t r = 0, s = -1, b = 0; r < n; ++r) {
        b = row_sentence[r] == s ? b + 1 : 0;
        s = row_sentence[r];
        prefix.push_back(bos);
        prefix.insert(prefix.end(), beams[s][b].tokens.begin(), beams[s][b].tokens.end());
      }
      ids = from_vector(prefix, {n, step + 1});
    }
    const auto lp =
        log_softmax(
            last_position(model.decode(ids, memory_rows, mask_rows, use_cache ? &cache : nullptr)),
            -1)
            .to_vector();  // [n, V]
    const int64_t V = static_cast<int64_t>(lp.size()) / n;
    // Candidates: every beam extended by every token, best first (ties: the smaller token,
    // then the earlier beam). Only a row's own best 2·beam can be among its sentence's best
    // 2·beam, which are enough to fill the beams after removing the ones that ended. The rows
    // find theirs in parallel.
    using Candidate = std::tuple<float, int64_t, int64_t>;  // (score, token, beam)
    auto better = [](const Candidate& a, const Candidate& b) {
      return std::get<0>(a) > std::get<0>(b) ||
             (std::get<0>(a) == std::get<0>(b) &&
              std::make_pair(std::get<1>(a), std::get<2>(a)) <
                  std::make_pair(std::get<1>(b), std::get<2>(b)));
    };
    const int64_t keep = 2 * o.beam_size;
    std::vector<float> base(n);
    for (int64_t r = 0, b = 0; r < n; ++r) {
      b = r > 0 && row_sentence[r] == row_sentence[r - 1] ? b + 1 : 0;
      base[r] = beams[row_sentence[r]][b].logp;
    }
    std::vector<std::vector<std::pair<float, int64_t>>> row_best(n);
    parallel_for(n, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        best_extensions(lp.data() + r * V, V, base[r], std::min(keep, V), row_best[r]);
    });
    std::vector<int64_t> next_rows, next_sentence;
    std::vector<int64_t> next_last;
    std::vector<Candidate> cand;
    for (int64_t first = 0; first < n;) {
      const int64_t s = row_sentence[first];
      const int64_t nb = static_cast<int64_t>(beams[s].size());
      cand.clear();
      for (int64_t b = 0; b < nb; ++b)
        for (const auto& [score, v] : row_best[first + b]) cand.emplace_back(score, v, b);
      const int64_t k = std::min<int64_t>(keep, static_cast<int64_t>(cand.size()));
      std::partial_sort(cand.begin(), cand.begin() + k, cand.end(), better);
      std::vector<Hyp> next;
      for (int64_t i = 0; i < k && static_cast<int64_t>(next.size()) < o.beam_size; ++i) {
        const auto [score, v, b] = cand[i];
        if (v == eos) {
          Hyp ended{beams[s][b].tokens, score, true};
          if (static_cast<int64_t>(finished[s].size()) < o.beam_size) {
            finished[s].push_back(std::move(ended));
          } else if (!o.early_stopping) {  // it replaces the worst ended one if it beats it
            auto worst = std::min_element(
                finished[s].begin(), finished[s].end(),
                [&](const Hyp& x, const Hyp& y) { return normalized(x) < normalized(y); });
            if (normalized(ended) > normalized(*worst)) *worst = std::move(ended);
          }
          continue;
        }
        Hyp h{beams[s][b].tokens, score, false};
        h.tokens.push_back(v);
        next.push_back(std::move(h));
        next_rows.push_back(first + b);
        next_last.push_back(v);
      }
      // Once beam_size hypotheses have ended, a sentence stops (early stopping), or goes on while
      // an open beam, scored at its present length, still beats the worst ended one: a longer
      // sentence may yet end better. Searching on gave beam 4 +0.5 validation BLEU on Tatoeba
      // eng-deu (docs/training.md). When it stops, the open beams do not compete: cut short,
      // their log-probability lacks the terms of the tokens still to come, which would make a
      // half sentence look better than every finished one.
      bool full = static_cast<int64_t>(finished[s].size()) >= o.beam_size;
      if (full && !o.early_stopping && !next.empty()) {
        float worst = INFINITY, best_open = -INFINITY;
        for (const auto& h : finished[s]) worst = std::min(worst, normalized(h));
        for (const auto& h : next) best_open = std::max(best_open, normalized(h));
        full = best_open <= worst;
      }
      const bool done = full || next.empty() || step + 1 >= max_lengths[s];
      if (done) {
        next_rows.resize(next_rows.size() - next.size());
        next_last.resize(next_last.size() - next.size());
        beams[s] = full ? std::vector<Hyp>{} : std::move(next);
        finish(s);
      } else {
        next_sentence.insert(next_sentence.end(), next.size(), s);
        beams[s] = std::move(next);
      }
      first += nb;
    }
    row_sentence = std::move(next_sentence);
    last = std::move(next_last);
    if (!row_sentence.empty()) take_rows(next_rows);
  }
  return out;
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
