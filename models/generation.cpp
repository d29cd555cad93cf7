#include "models/generation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace anatomy::models {

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

}  // namespace

std::vector<Generated> greedy_decode(Seq2SeqTransformer& model, const Tensor& source_ids,
                                     int64_t bos, int64_t eos, int64_t max_length, bool use_cache) {
  NoGradGuard no_grad;
  use_cache = use_cache && model.decoder->has_kv_cache();
  const int64_t B = source_ids.size(0);
  auto [memory, source_mask] = model.encode(source_ids);
  std::vector<Generated> out(B);
  std::vector<bool> done(B, false);
  std::vector<int64_t> sequence(B, bos);  // [t, B] step-major: each step appends B tokens
  int64_t t = 1;
  DecoderCache cache;
  for (int64_t step = 0; step < max_length; ++step) {
    // `sequence` is stored step-major ([t, B]); the decoder wants [B, t], or [B, 1] with a cache.
    Tensor ids = use_cache
                     ? from_vector(std::vector<int64_t>(sequence.end() - B, sequence.end()), {B, 1})
                     : from_vector(sequence, {t, B}).t().contiguous();
    Tensor logits =
        last_position(model.decode(ids, memory, source_mask, use_cache ? &cache : nullptr));
    Tensor next = argmax(logits, -1);
    const auto next_ids = next.to_int_vector();
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      if (!done[b]) {
        out[b].logits.push_back(logits.select(0, b).clone());
        if (next_ids[b] == eos) {
          done[b] = true;
        } else {
          out[b].tokens.push_back(next_ids[b]);
        }
      }
      all_done = all_done && done[b];
    }
    for (int64_t b = 0; b < B; ++b) sequence.push_back(done[b] ? eos : next_ids[b]);
    ++t;
    if (all_done) break;
  }
  return out;
}

Generated beam_search(Seq2SeqTransformer& model, const Tensor& source_ids, int64_t bos, int64_t eos,
                      int64_t max_length, int64_t beam_size, float length_penalty) {
  if (source_ids.dim() != 2 || source_ids.size(0) != 1)
    throw Error(fmt::format("beam_search: expected one source row [1, S], got {}",
                            source_ids.shape().str()));
  if (beam_size < 1)
    throw Error(fmt::format("beam_search: beam size must be >= 1 (got {})", beam_size));
  NoGradGuard no_grad;
  auto [memory1, mask1] = model.encode(source_ids);
  struct Hyp {
    std::vector<int64_t> tokens;
    float logp;
    bool ended = false;  // closed by the end token (which then counts in the length)
  };
  auto normalized = [&](const Hyp& h) {
    const double len = static_cast<double>(h.tokens.size() + (h.ended ? 1 : 0));
    return length_penalty == 0.0f
               ? h.logp
               : static_cast<float>(h.logp / std::pow((5.0 + len) / 6.0, length_penalty));
  };
  std::vector<Hyp> beams{{{}, 0.0f}};
  std::vector<Hyp> finished;
  DecoderCache cache;
  Tensor last = from_vector(std::vector<int64_t>{bos}, {1, 1});
  for (int64_t step = 0; step < max_length && !beams.empty(); ++step) {
    const int64_t n = static_cast<int64_t>(beams.size());
    Tensor memory = memory1.expand({n, memory1.size(1), memory1.size(2)});
    Tensor mask = mask1.expand({n, 1, mask1.size(2)});
    Tensor logp =
        log_softmax(last_position(model.decode(last, memory, mask, &cache)), -1);  // [n, V]
    const int64_t V = logp.size(1);
    const auto lp = logp.to_vector();
    // Candidates: every beam extended by every token; keep the best 2·beam to fill beams
    // after removing finished ones.
    std::vector<std::tuple<float, int64_t, int64_t>> cand;  // (score, beam, token)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t v = 0; v < V; ++v) cand.emplace_back(beams[b].logp + lp[b * V + v], b, v);
    const size_t keep = std::min(cand.size(), static_cast<size_t>(2 * beam_size));
    std::partial_sort(
        cand.begin(), cand.begin() + static_cast<int64_t>(keep), cand.end(),
        [](const auto& a, const auto& b) {
          return std::get<0>(a) > std::get<0>(b) ||
                 (std::get<0>(a) == std::get<0>(b) && std::get<2>(a) < std::get<2>(b));
        });
    std::vector<Hyp> next;
    std::vector<int64_t> rows, tokens;
    for (size_t i = 0; i < keep && static_cast<int64_t>(next.size()) < beam_size; ++i) {
      auto [score, b, v] = cand[i];
      if (v == eos) {
        if (static_cast<int64_t>(finished.size()) < beam_size)
          finished.push_back({beams[b].tokens, score, true});
        continue;
      }
      Hyp h{beams[b].tokens, score, false};
      h.tokens.push_back(v);
      next.push_back(h);
      rows.push_back(b);
      tokens.push_back(v);
    }
    // Stop once beam_size hypotheses have ended; the best is chosen among them. The open beams
    // do not compete: cut short, their log-probability lacks the terms of the tokens still to
    // come, which would make a half sentence look better than every finished one.
    if (static_cast<int64_t>(finished.size()) >= beam_size) {
      beams.clear();
      break;
    }
    beams = next;
    if (beams.empty()) break;
    const Tensor row_index = from_vector(rows, {static_cast<int64_t>(rows.size())});
    reorder(cache, row_index);
    last = from_vector(tokens, {static_cast<int64_t>(tokens.size()), 1});
  }
  for (const auto& h : beams) finished.push_back(h);  // still open at max_length
  const Hyp* best = nullptr;
  float best_score = -INFINITY;
  for (const auto& h : finished) {
    const float s = normalized(h);
    if (!best || s > best_score) best = &h, best_score = s;
  }
  Generated g;
  if (best) {
    g.tokens = best->tokens;
    g.score = best_score;
  }
  return g;
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
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
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

}  // namespace anatomy::models
