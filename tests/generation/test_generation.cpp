// Decoding: greedy, sampling and beam search, with and without the KV cache and padding.
#include "../models/model_fixtures.hpp"
#include "generation/generation.hpp"

using namespace anatomy;
using namespace anatomy::generation;
using namespace anatomy::models;
using namespace anatomy::testing;

TEST_CASE("greedy decoding of a batch whose rows end at different steps, as each alone") {
  manual_seed(11);
  Seq2SeqTransformer s2s(small());
  s2s.eval();
  const int64_t B = 24, S = 6, eos = 2, max_length = 12;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < B * S; ++i) ids.push_back(3 + (i * 7 + i / S) % 27);
  const Tensor src = from_vector(ids, {B, S});
  // Raise the end token's bias until the rows end at many different steps.
  std::vector<Generated> batch;
  std::set<size_t> lengths;
  for (int raise = 0; raise < 32 && lengths.size() < 5; ++raise) {
    NoGradGuard no_grad;
    s2s.generator->bias.data()[eos] += 0.25f;
    batch = greedy_decode(s2s, src, 1, eos, max_length, {.output_scores = true});
    lengths.clear();
    for (const auto& g : batch) lengths.insert(g.tokens.size());
  }
  REQUIRE(lengths.size() >= 5);  // e.g. some rows end at step 1, others run to the limit
  for (int64_t b = 0; b < B; ++b) {
    CAPTURE(b);
    const auto alone =
        greedy_decode(s2s, src.narrow(0, b, 1), 1, eos, max_length, {.output_scores = true})[0];
    CHECK(batch[b].tokens == alone.tokens);
    REQUIRE(batch[b].logits.size() == alone.logits.size());
    for (size_t i = 0; i < alone.logits.size(); ++i)
      CHECK_CLOSE(batch[b].logits[i], alone.logits[i], 1e-5, 1e-4);
  }
}

TEST_CASE("KV cache: greedy decoding with and without it gives the same tokens and logits") {
  manual_seed(4);
  Seq2SeqTransformer s2s(small());
  s2s.eval();
  Tensor src = tensor({{5, 6, 7, 8, 9}, {3, 4, 0, 0, 0}});
  auto cached = greedy_decode(s2s, src, 1, 2, 10, {.output_scores = true});
  auto plain = greedy_decode(s2s, src, 1, 2, 10, {.use_cache = false, .output_scores = true});
  REQUIRE(cached.size() == 2);
  for (size_t b = 0; b < 2; ++b) {
    CHECK(cached[b].tokens == plain[b].tokens);
    REQUIRE(cached[b].logits.size() == plain[b].logits.size());
    for (size_t i = 0; i < cached[b].logits.size(); ++i) {
      CHECK_CLOSE(cached[b].logits[i], plain[b].logits[i], 1e-5, 1e-4);
      // Row b's logits over the 20 target tokens, whose argmax is the token chosen.
      REQUIRE(cached[b].logits[i].shape() == Shape{20});
      const int64_t chosen = argmax(cached[b].logits[i], -1).item<int64_t>();
      if (i < cached[b].tokens.size())
        CHECK(chosen == cached[b].tokens[i]);
      else
        CHECK(chosen == 2);  // the last step chose the end token
    }
  }
  CHECK_FALSE(cached[0].logits.empty());
  // Without output_scores (the default) the same tokens come, and no logits are kept.
  const auto lean = greedy_decode(s2s, src, 1, 2, 10);
  CHECK(lean[0].tokens == cached[0].tokens);
  CHECK(lean[1].tokens == cached[1].tokens);
  CHECK(lean[0].logits.empty());
  CHECK(s2s.decoder->has_kv_cache());
  Seq2SeqTransformer book(small(false));  // the book's heads keep no cache: decoding recomputes
  CHECK_FALSE(book.decoder->has_kv_cache());
  // Beam size 1 is greedy.
  auto beam1 = beam_search(s2s, src.narrow(0, 0, 1), 1, 2, 10, 1, 0.0f);
  CHECK(beam1.tokens == cached[0].tokens);
  // The one-sentence form takes one row; a batch goes to the batched form.
  REQUIRE(src.size(0) >= 2);
  check_error([&] { beam_search(s2s, src, 1, 2, 10, 2, 0.0f); },
              {"beam_search", "one source row [1, S]", src.shape().str()});
  check_error([&] { beam_search(s2s, src.select(0, 0), 1, 2, 10, 2, 0.0f); },
              {"beam_search", "one source row [1, S]"});

  TransformerForCausalLM lm(small());
  lm.eval();
  auto g1 = generate(lm, {3, 4, 5}, 12, {.temperature = 0.0f, .use_cache = true});
  auto g2 = generate(lm, {3, 4, 5}, 12, {.temperature = 0.0f, .use_cache = false});
  CHECK(g1.tokens == g2.tokens);
  for (size_t i = 0; i < g1.logits.size(); ++i) CHECK_CLOSE(g1.logits[i], g2.logits[i], 1e-5, 1e-4);
}

// Post-LN decoder layers (the paper's) take their own path through the cache: each step's
// self-attention keys and values are added to it, the encoder's are kept.
TEST_CASE("KV cache: a post-LN decoder decodes with it as without it") {
  auto c = small();
  c.pre_layer_norm = false;
  const Tensor src = tensor({{5, 6, 7, 8, 9}, {3, 4, 0, 0, 0}});
  // A model whose rows both decode 3 steps or more: steps that read what the cache holds.
  std::vector<Generated> cached, plain;
  uint64_t seed = 4;
  for (; seed < 60; ++seed) {
    manual_seed(seed);
    Seq2SeqTransformer s2s(c);
    s2s.eval();
    cached = greedy_decode(s2s, src, 1, 2, 10, {.output_scores = true});
    plain = greedy_decode(s2s, src, 1, 2, 10, {.use_cache = false, .output_scores = true});
    if (cached[0].logits.size() >= 3 && cached[1].logits.size() >= 3) break;
  }
  CAPTURE(seed);
  for (size_t b = 0; b < 2; ++b) {
    CAPTURE(b);
    CHECK(cached[b].tokens == plain[b].tokens);
    REQUIRE(cached[b].logits.size() == plain[b].logits.size());
    REQUIRE(cached[b].logits.size() >= 3);
    for (size_t i = 0; i < cached[b].logits.size(); ++i)
      CHECK_CLOSE(cached[b].logits[i], plain[b].logits[i], 1e-5, 1e-4);
  }
}

TEST_CASE("sampling is reproducible and respects top-k") {
  manual_seed(5);
  TransformerForCausalLM lm(small());
  lm.eval();
  manual_seed(6);
  auto a = generate(lm, {1}, 8, {.temperature = 1.0f, .top_k = 3});
  manual_seed(6);
  auto b = generate(lm, {1}, 8, {.temperature = 1.0f, .top_k = 3});
  CHECK(a.tokens == b.tokens);
  CHECK(a.tokens.size() == 8);
  auto c = generate(lm, {1}, 30, {.temperature = 0.0f});  // past max positions: a sliding window
  CHECK(c.tokens.size() == 30);
  // top_k = 1 keeps only the most likely token: greedy, however hot the temperature.
  const auto greedy = generate(lm, {1}, 8, {.temperature = 0.0f});
  manual_seed(7);
  CHECK(generate(lm, {1}, 8, {.temperature = 5.0f, .top_k = 1}).tokens == greedy.tokens);
  // Every sampled token is among the 3 most likely after its prefix.
  NoGradGuard no_grad;
  std::vector<int64_t> seq{1};
  for (int64_t t : a.tokens) {
    const auto p = softmax(lm.forward(from_vector(seq, {1, static_cast<int64_t>(seq.size())}))
                               .select(0, 0)
                               .select(0, static_cast<int64_t>(seq.size()) - 1),
                           -1)
                       .to_vector();
    int64_t above = 0;
    for (float q : p) above += q > p[static_cast<size_t>(t)];
    CHECK_MESSAGE(above < 3, "token ", t, " has rank ", above);
    seq.push_back(t);
  }
}

TEST_CASE("top-k and top-p draw from exactly the kept tokens, in proportion") {
  manual_seed(8);
  TransformerForCausalLM lm(small());
  lm.eval();
  NoGradGuard no_grad;
  // A sharp distribution (temperature 0.3) over the 20 tokens after the prompt {2, 5}.
  const float temperature = 0.3f;
  auto p =
      softmax(lm.forward(tensor({{2, 5}})).select(0, 0).select(0, 1) / temperature, -1).to_vector();
  std::vector<int64_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return p[x] > p[y]; });
  auto draw = [&](const SamplingOptions& o, int n) {
    std::map<int64_t, int> counts;
    manual_seed(9);
    for (int i = 0; i < n; ++i) ++counts[generate(lm, {2, 5}, 1, o).tokens[0]];
    return counts;
  };
  // top-k 2: only the two most likely tokens, in the ratio of their probabilities.
  const int n = 2000;
  auto k2 = draw({.temperature = temperature, .top_k = 2}, n);
  CHECK(k2.size() == 2);
  const double share = p[order[0]] / (p[order[0]] + p[order[1]]);
  // Binomial standard deviation at n = 2000 is at most 1.2%; 5 of them is far from chance.
  CHECK(std::abs(k2[order[0]] / static_cast<double>(n) - share) < 0.06);
  CHECK(k2[order[0]] + k2[order[1]] == n);
  // top-p: the smallest prefix of the sorted tokens whose mass reaches top_p.
  const float top_p = static_cast<float>(p[order[0]] + 0.5 * p[order[1]]);  // needs two tokens
  auto nucleus = draw({.temperature = temperature, .top_p = top_p}, 400);
  CHECK(nucleus.size() == 2);
  CHECK(nucleus.count(order[0]) == 1);
  CHECK(nucleus.count(order[1]) == 1);
  // top-p below the first token's mass keeps that one token: greedy.
  auto one = draw({.temperature = temperature, .top_p = static_cast<float>(p[order[0]] * 0.5)}, 50);
  CHECK(one.size() == 1);
  CHECK(one.count(order[0]) == 1);
  // A prefix whose mass equals top_p exactly reaches it: the first token alone (`mass > top_p`
  // would keep a second token). 400 draws: the second token has about 1 - p0 of them.
  REQUIRE(p[order[1]] > 0.05f);
  auto exact = draw({.temperature = temperature, .top_p = p[order[0]]}, 400);
  CHECK(exact.size() == 1);
  CHECK(exact.count(order[0]) == 1);
}

// With every logit equal (an output layer of zeros) the order of the tokens decides: ties keep the
// smaller token first, so top-k 1 is token 0 and top-k 2 draws only tokens 0 and 1 (a comparator
// that is not strict leaves ties in whatever order the sort makes).
TEST_CASE("sampling: equally likely tokens are ranked by token id") {
  const auto model = eval_lm();
  TransformerForCausalLM& lm = *model;
  NoGradGuard no_grad;
  lm.lm_head->weight.fill_(0.0f);
  if (lm.lm_head->bias.defined()) lm.lm_head->bias.fill_(0.0f);
  manual_seed(1);
  CHECK(generate(lm, {2, 5}, 3, {.temperature = 1.0f, .top_k = 1}).tokens ==
        std::vector<int64_t>{0, 0, 0});
  std::set<int64_t> seen;
  for (int i = 0; i < 40; ++i)
    for (int64_t t : generate(lm, {2, 5}, 1, {.temperature = 1.0f, .top_k = 2}).tokens)
      seen.insert(t);
  CHECK(seen == std::set<int64_t>{0, 1});
}

TEST_CASE("sampling with top-k 1 is greedy, token 0 included") {
  const auto model = eval_lm();
  TransformerForCausalLM& lm = *model;
  NoGradGuard no_grad;
  // Token 0 made the most likely next token everywhere: the final norm outputs nearly the same
  // vector u at every position (gain 0.01, bias u), and token 0's output row is u.
  const auto params = lm.state_dict();
  float* gain = params.at("decoder.layer_norm.weight").data_ptr<float>();
  float* bias = params.at("decoder.layer_norm.bias").data_ptr<float>();
  float* row0 = lm.lm_head->weight.data_ptr<float>();
  for (int64_t i = 0; i < lm.lm_head->weight.size(1); ++i) {
    gain[i] = 0.01f;
    bias[i] = row0[i] = (i % 2 ? 1.0f : -1.0f);
  }
  const auto greedy = generate(lm, {2, 5}, 4, {.temperature = 0.0f}).tokens;
  CHECK(greedy == std::vector<int64_t>{0, 0, 0, 0});
  manual_seed(9);
  CHECK(generate(lm, {2, 5}, 4, {.temperature = 1.0f, .top_k = 1}).tokens == greedy);
  CHECK(generate(lm, {2, 5}, 4, {.temperature = 1.0f, .top_p = 0.5f}).tokens == greedy);
  // Each option out of range is refused on its own, naming the three limits and what came.
  const std::vector<SamplingOptions> bad{
      {.temperature = -1.0f}, {.top_p = 0.0f}, {.top_p = 1.5f}, {.top_k = -1}};
  for (const auto& o : bad)
    check_error(
        [&] {
          generate(lm, {2, 5}, 4, o);
        },
        {"generate", "temperature >= 0, 0 < top_p <= 1, top_k >= 0",
         fmt::format("got {}, {}, {}", o.temperature, o.top_p, o.top_k)});
  check_error([&] { generate(lm, {}, 4); }, {"generate: the prompt is empty"});
}

TEST_CASE("beam search finds the best-scoring sequence, with GNMT's length penalty") {
  // A model small enough to score every output: 6 target tokens, outputs of up to 3.
  const auto model = eval_s2s(10);
  Seq2SeqTransformer& s2s = *model;
  NoGradGuard no_grad;
  // Sharper outputs (the generator's weights times 6): at initialization every prefix predicts
  // nearly the same distribution, which would hide a search that scores a beam's extensions
  // with another beam's log-probabilities.
  float* w = s2s.generator->weight.data_ptr<float>();
  for (int64_t i = 0; i < s2s.generator->weight.numel(); ++i) w[i] *= 6.0f;
  const Tensor src = tensor({{5, 6, 7}});
  const int64_t bos = 1, eos = 2, max_length = 3;
  // log P(tokens [, eos]) by teacher forcing, without the cache.
  auto logp = [&](const std::vector<int64_t>& tokens, bool ended) {
    std::vector<int64_t> in{bos};
    in.insert(in.end(), tokens.begin(), tokens.end());
    auto lp = log_softmax(
        s2s.forward(src, from_vector(in, {1, static_cast<int64_t>(in.size())})).select(0, 0), -1);
    double total = 0;
    for (size_t i = 0; i < tokens.size(); ++i)
      total += lp.select(0, static_cast<int64_t>(i)).select(0, tokens[i]).item<double>();
    if (ended)
      total += lp.select(0, static_cast<int64_t>(tokens.size())).select(0, eos).item<double>();
    return total;
  };
  // Then again with token 0 made likely: a search that never extends a beam with token 0 (the
  // padding id in the translation vocabularies, yet a token like any other to the search) fails.
  // Last with the end token made likely, so that the best hypotheses have ended: their length
  // counts the end token (a finished hypothesis not marked ended would lose it).
  for (const int64_t favour : {int64_t{-1}, int64_t{0}, eos})
    for (const float alpha : {0.0f, 0.6f, 2.0f}) {
      const bool favour_zero = favour == 0;
      float* bias = s2s.generator->bias.data_ptr<float>();
      if (favour_zero && alpha == 0.0f) bias[0] += 15.0f;
      if (favour == eos && alpha == 0.0f) bias[0] -= 15.0f, bias[eos] += 8.0f;
      // Every candidate: up to max_length - 1 tokens then [EOS], or max_length tokens unfinished.
      double best = -1e30;
      std::vector<int64_t> best_tokens;
      std::function<void(std::vector<int64_t>)> visit = [&](std::vector<int64_t> tokens) {
        const bool full = static_cast<int64_t>(tokens.size()) == max_length;
        const double len = static_cast<double>(tokens.size()) + (full ? 0 : 1);
        const double score =
            logp(tokens, !full) / (alpha == 0 ? 1 : std::pow((5 + len) / 6, alpha));
        if (score > best) best = score, best_tokens = tokens;
        if (full) return;
        for (int64_t v = 0; v < 6; ++v)
          if (v != eos) {
            auto next = tokens;
            next.push_back(v);
            visit(next);
          }
      };
      visit({});
      CAPTURE(alpha);
      CAPTURE(favour);
      if (favour_zero) CHECK(std::count(best_tokens.begin(), best_tokens.end(), 0) > 0);
      if (favour == eos) CHECK(static_cast<int64_t>(best_tokens.size()) < max_length);
      // A beam wide enough to keep everything is exhaustive search.
      const auto wide = beam_search(s2s, src, bos, eos, max_length, 400, alpha);
      CHECK(wide.tokens == best_tokens);
      CHECK(wide.score == doctest::Approx(best).epsilon(1e-4));
      // A narrow beam: whatever it returns, its score is that sequence's true normalized score,
      // and no better than the best.
      const auto narrow = beam_search(s2s, src, bos, eos, max_length, 2, alpha);
      const bool full = static_cast<int64_t>(narrow.tokens.size()) == max_length;
      const double len = static_cast<double>(narrow.tokens.size()) + (full ? 0 : 1);
      CHECK(narrow.score == doctest::Approx(logp(narrow.tokens, !full) /
                                            (alpha == 0 ? 1 : std::pow((5 + len) / 6, alpha)))
                                .epsilon(1e-4));
      CHECK(narrow.score <= best + 1e-4);
    }
}

TEST_CASE("beam search scores each beam's extensions with that beam's own log-probabilities") {
  // A greedy trap: the best 3-token output does not start with the most likely first token, so
  // it lives in a beam other than the first. Models are tried seed by seed until one sets it.
  auto c = small();
  c.target_vocab_size = 6;
  const Tensor src = tensor({{5, 6, 7}});
  const int64_t bos = 1, eos = 2;
  int traps = 0;
  for (uint64_t seed = 20; seed < 60 && traps < 2; ++seed) {
    manual_seed(seed);
    Seq2SeqTransformer s2s(c);
    s2s.eval();
    NoGradGuard no_grad;
    // log P of every full 3-token output without [EOS] (none is allowed to end early here:
    // [EOS] gets a very low score).
    sharpen(s2s, 6.0f, eos, -100.0f);
    auto lp_all = [&](const std::vector<int64_t>& prefix) {
      return next_log_probs(s2s, src, bos, prefix);
    };
    const auto first = lp_all({});
    const int64_t greedy_first = std::max_element(first.begin(), first.end()) - first.begin();
    double best = -1e30;
    std::vector<int64_t> best_tokens;
    for (int64_t a = 0; a < 6; ++a)
      for (int64_t b = 0; b < 6; ++b) {
        const auto second = lp_all({a});
        const auto third = lp_all({a, b});
        for (int64_t d = 0; d < 6; ++d) {
          const double score = first[a] + second[b] + third[d];
          if (score > best) best = score, best_tokens = {a, b, d};
        }
      }
    // Width 2 by hand: every extension of both beams scored, the best two kept, three times.
    // Beam search must keep the same two (a wrong order of candidates keeps others).
    std::vector<std::pair<double, std::vector<int64_t>>> hand{{0.0, {}}};
    for (int step = 0; step < 3; ++step) {
      std::vector<std::pair<double, std::vector<int64_t>>> next;
      for (const auto& [score, tokens] : hand) {
        const auto lp = lp_all(tokens);
        for (int64_t v = 0; v < 6; ++v) {
          next.push_back({score + lp[v], tokens});
          next.back().second.push_back(v);
        }
      }
      std::sort(next.begin(), next.end(),
                [](const auto& x, const auto& y) { return x.first > y.first; });
      next.resize(2);
      hand = next;
    }
    const auto two = beam_search(s2s, src, bos, eos, 3, 2, 0.0f);
    CHECK(two.tokens == hand[0].second);
    CHECK(two.score == doctest::Approx(hand[0].first).epsilon(1e-4));
    if (best_tokens[0] == greedy_first) continue;
    ++traps;
    CAPTURE(seed);
    const auto wide = beam_search(s2s, src, bos, eos, 3, 400, 0.0f);
    CHECK(wide.tokens == best_tokens);
    CHECK(wide.score == doctest::Approx(best).epsilon(1e-4));
  }
  CHECK(traps > 0);
}

// Beam search with the end token in play, against the search written out: each step every open
// beam's `keep` best extensions, the sentence's `keep` best of those walked in order, an [EOS]
// closing a hypothesis (up to `beam` of them) and any other token opening a beam (up to `beam`).
// The library keeps 2·beam: enough to refill the beams when up to `beam` of the best end. Seeds
// are tried until keeping only `beam` would change the result, so that the test sees the
// difference. (One row never gives more than beam + 1 of those walked, its beam best tokens and
// its one [EOS], so a per-row cap of 2·beam - 1 would change nothing for beam >= 2, and for
// beam 1 an [EOS] ends the search: no test can tell it from 2·beam.)
// By hand, with either rule for when a sentence is done: once `beam` hypotheses have ended
// (early stopping), or once no open beam scores above the worst of the `beam` best ended ones.
TEST_CASE("beam search keeps 2 x beam candidates, so ended hypotheses do not starve the beams") {
  auto c = small();
  c.target_vocab_size = 6;
  const Tensor src = tensor({{5, 6, 7}});
  const int64_t bos = 1, eos = 2, beam = 2, max_length = 4;
  using Hyp = std::pair<double, std::vector<int64_t>>;
  int fewer_kept = 0, stopped_early_worse = 0;
  for (uint64_t seed = 60; seed < 400 && (fewer_kept < 3 || stopped_early_worse < 2); ++seed) {
    manual_seed(seed);
    Seq2SeqTransformer s2s(c);
    s2s.eval();
    NoGradGuard no_grad;
    sharpen(s2s, 4.0f, eos, 1.5f);  // ending is often among the best
    std::map<std::vector<int64_t>, std::vector<float>> memo;
    auto lp_all = [&](const std::vector<int64_t>& prefix) {
      if (!memo.count(prefix)) memo[prefix] = next_log_probs(s2s, src, bos, prefix);
      return memo[prefix];
    };
    // Best first: higher score, then the smaller token, then the earlier beam.
    using Candidate = std::tuple<double, int64_t, size_t>;  // (score, token, beam)
    auto better = [](const Candidate& x, const Candidate& y) {
      return std::get<0>(x) > std::get<0>(y) ||
             (std::get<0>(x) == std::get<0>(y) &&
              std::make_pair(std::get<1>(x), std::get<2>(x)) <
                  std::make_pair(std::get<1>(y), std::get<2>(y)));
    };
    // `keep` per beam, then `keep` per sentence.
    auto by_hand = [&](size_t keep, bool early_stopping) {
      std::vector<Hyp> open{{0.0, {}}}, finished;
      for (int64_t step = 0; step < max_length; ++step) {
        std::vector<Candidate> cand;
        for (size_t b = 0; b < open.size(); ++b) {
          const auto lp = lp_all(open[b].second);
          std::vector<Candidate> row;
          for (int64_t v = 0; v < 6; ++v) row.emplace_back(open[b].first + lp[v], v, b);
          std::sort(row.begin(), row.end(), better);
          cand.insert(cand.end(), row.begin(), row.begin() + keep);
        }
        std::sort(cand.begin(), cand.end(), better);
        cand.resize(std::min(keep, cand.size()));
        std::vector<Hyp> next;
        for (const auto& [score, v, b] : cand) {
          if (next.size() == beam) break;
          if (v == eos) {
            auto worst = std::min_element(finished.begin(), finished.end());
            if (finished.size() < beam)
              finished.push_back({score, open[b].second});
            else if (!early_stopping && score > worst->first)
              *worst = {score, open[b].second};
            continue;
          }
          next.push_back({score, open[b].second});
          next.back().second.push_back(v);
        }
        open = std::move(next);
        bool done = finished.size() >= beam;
        if (done && !early_stopping && !open.empty())
          done = std::max_element(open.begin(), open.end())->first <=
                 std::min_element(finished.begin(), finished.end())->first;
        if (done) open.clear();
        if (open.empty()) break;
      }
      for (auto& h : open) finished.push_back(h);  // cut short at the length limit
      Hyp best = finished.front();
      for (const auto& h : finished)
        if (h.first > best.first) best = h;
      return best;
    };
    CAPTURE(seed);
    const Hyp right = by_hand(2 * beam, false);
    const auto got = beam_search(s2s, src, bos, eos, {max_length},
                                 {.beam_size = beam, .length_penalty = 0.0f})[0];
    CHECK(got.tokens == right.second);
    CHECK(got.score == doctest::Approx(right.first).epsilon(1e-4));
    const Hyp early = by_hand(2 * beam, true);
    const auto got_early =
        beam_search(s2s, src, bos, eos, {max_length},
                    {.beam_size = beam, .length_penalty = 0.0f, .early_stopping = true})[0];
    CHECK(got_early.tokens == early.second);
    CHECK(got_early.score == doctest::Approx(early.first).epsilon(1e-4));
    // Searching on never finds worse; where it finds better, early stopping missed it.
    CHECK(right.first >= early.first);
    if (right.first > early.first + 1e-6) ++stopped_early_worse;
    // Keeping only `beam` candidates would make a difference: with early stopping, ended
    // hypotheses would take the places of open beams.
    if (by_hand(beam, true).second != early.second) ++fewer_kept;
  }
  CHECK(fewer_kept >= 3);
  CHECK(stopped_early_worse >= 2);
}

TEST_CASE("greedy decoding of a padded batch finds what each sentence finds alone") {
  // Rows that end early leave the batch: the others must decode on as if alone. Seeds are tried
  // until the three sentences end at three different steps, before the length limit.
  const int64_t bos = 1, eos = 2, max_length = 8;
  const std::vector<std::vector<int64_t>> sources{{5, 6, 7}, {9, 8, 7, 6, 5}, {11, 4}};
  const Tensor batch = tensor({{5, 6, 7, 0, 0}, {9, 8, 7, 6, 5}, {11, 4, 0, 0, 0}});
  NoGradGuard no_grad;
  bool found = false;
  for (uint64_t seed = 40; seed < 140 && !found; ++seed) {
    manual_seed(seed);
    Seq2SeqTransformer s2s(small());
    s2s.eval();
    float* w = s2s.generator->weight.data_ptr<float>();
    for (int64_t i = 0; i < s2s.generator->weight.numel(); ++i) w[i] *= 6.0f;
    s2s.generator->bias.data_ptr<float>()[eos] += 2.0f;  // ends within reach
    std::vector<Generated> alone;
    std::set<size_t> lengths;
    for (const auto& s : sources) {
      alone.push_back(greedy_decode(s2s, from_vector(s, {1, static_cast<int64_t>(s.size())}), bos,
                                    eos, max_length, {.output_scores = true})[0]);
      lengths.insert(alone.back().tokens.size());
    }
    if (lengths.size() < 3 || *lengths.rbegin() >= static_cast<size_t>(max_length)) continue;
    found = true;
    CAPTURE(seed);
    for (const bool use_cache : {true, false}) {
      CAPTURE(use_cache);
      const auto together = greedy_decode(s2s, batch, bos, eos, max_length,
                                          {.use_cache = use_cache, .output_scores = true});
      for (size_t b = 0; b < sources.size(); ++b) {
        CAPTURE(b);
        CHECK(together[b].tokens == alone[b].tokens);
        // One step's logits per token, and one for the step that chose the end token.
        REQUIRE(together[b].logits.size() == alone[b].tokens.size() + 1);
        for (size_t i = 0; i < together[b].logits.size(); ++i)
          CHECK_CLOSE(together[b].logits[i], alone[b].logits[i], 1e-5, 1e-4);
      }
    }
  }
  CHECK(found);
}

// Translator gives each sentence its own longest output (2 x its length + 10): a row that
// reaches its own stops there, as it would alone, however long the batch's others may run.
TEST_CASE("greedy decoding stops each row at its own longest output") {
  manual_seed(11);
  Seq2SeqTransformer s2s(small());
  s2s.eval();
  const int64_t bos = 1, eos = 2;
  const Tensor batch =
      tensor({{5, 6, 7, 0, 0}, {9, 8, 7, 6, 5}, {11, 4, 0, 0, 0}, {3, 3, 0, 0, 0}});
  const std::vector<int64_t> limits{2, 9, 0, 5};
  const std::vector<int64_t> widths{3, 5, 2, 2};
  for (const bool use_cache : {true, false}) {
    CAPTURE(use_cache);
    const auto together = greedy_decode(s2s, batch, bos, eos, limits, {.use_cache = use_cache});
    REQUIRE(together.size() == limits.size());
    int64_t cut = 0;  // rows stopped by their own limit, short of the batch's longest
    for (size_t b = 0; b < limits.size(); ++b) {
      CAPTURE(b);
      const auto& got = together[b].tokens;
      const auto alone = greedy_decode(s2s, batch.narrow(0, b, 1).narrow(1, 0, widths[b]), bos, eos,
                                       limits[b], {.use_cache = use_cache})[0];
      CHECK(got == alone.tokens);
      CHECK(static_cast<int64_t>(got.size()) <= limits[b]);
      cut += static_cast<int64_t>(got.size()) == limits[b] && limits[b] < 9;
    }
    CHECK(together[2].tokens.empty());
    CHECK(cut >= 2);  // the untrained model rarely ends: rows 0 and 3 reach their limits
  }
  CHECK_THROWS_WITH(greedy_decode(s2s, batch, bos, eos, std::vector<int64_t>{4, 4}),
                    "greedy_decode: 4 source rows but 2 max lengths");
}

TEST_CASE("beam search over a padded batch finds what each sentence finds alone") {
  const int64_t bos = 1, eos = 2;
  const std::vector<std::vector<int64_t>> sources{{5, 6, 7}, {9, 8, 7, 6, 5}, {11, 4}, {20}};
  const std::vector<int64_t> max_lengths{4, 7, 3, 0};
  // A model whose three searches go three ways (so that a batch that mixed their rows up would
  // show): at initialization most sources decode alike, so seeds are tried until one differs.
  std::unique_ptr<Seq2SeqTransformer> s2s;
  std::vector<Generated> alone;
  NoGradGuard no_grad;
  for (uint64_t seed = 31; seed < 90; ++seed) {
    manual_seed(seed);
    s2s = std::make_unique<Seq2SeqTransformer>(small());
    s2s->eval();
    // Sharper outputs (see above).
    float* w = s2s->generator->weight.data_ptr<float>();
    for (int64_t i = 0; i < s2s->generator->weight.numel(); ++i) w[i] *= 6.0f;
    alone.clear();
    for (size_t b = 0; b < sources.size(); ++b)
      alone.push_back(
          beam_search(*s2s, from_vector(sources[b], {1, static_cast<int64_t>(sources[b].size())}),
                      bos, eos, max_lengths[b], 3, 0.6f));
    if (alone[0].tokens != alone[1].tokens && alone[1].tokens != alone[2].tokens &&
        alone[0].tokens != alone[2].tokens)
      break;
  }
  REQUIRE(alone[0].tokens != alone[1].tokens);
  REQUIRE(alone[1].tokens != alone[2].tokens);
  REQUIRE(alone[0].tokens != alone[2].tokens);
  CHECK(alone[3].tokens.empty());
  // Each stays within its own length.
  for (size_t b = 0; b < sources.size(); ++b)
    CHECK(static_cast<int64_t>(alone[b].tokens.size()) <= max_lengths[b]);
  const Tensor batch =
      tensor({{5, 6, 7, 0, 0}, {9, 8, 7, 6, 5}, {11, 4, 0, 0, 0}, {20, 0, 0, 0, 0}});
  for (const bool use_cache : {true, false}) {
    CAPTURE(use_cache);
    const auto together =
        beam_search(*s2s, batch, bos, eos, max_lengths,
                    {.beam_size = 3, .length_penalty = 0.6f, .use_cache = use_cache});
    REQUIRE(together.size() == sources.size());
    for (size_t b = 0; b < sources.size(); ++b) {
      CAPTURE(b);
      CHECK(together[b].tokens == alone[b].tokens);
      CHECK(together[b].score == doctest::Approx(alone[b].score).epsilon(1e-5));
    }
  }
  check_error(
      [&] {
        beam_search(*s2s, batch, bos, eos, {4, 7});
      },
      {"beam_search", "4 source rows", "2 max lengths"});
  check_error([&] { beam_search(*s2s, batch, bos, eos, max_lengths, {.beam_size = 0}); },
              {"beam_search", "beam size must be >= 1", "got 0"});
}

// A longest output of one token: one step, whose best token is greedy's first (every open
// hypothesis has the same length, and ending at once scores below the best token).
TEST_CASE("beam search with a longest output of 1 gives greedy's first token") {
  manual_seed(11);
  Seq2SeqTransformer s2s(small());
  s2s.eval();
  const int64_t bos = 1, eos = 2;
  const Tensor batch = tensor({{5, 6, 7, 0}, {9, 8, 7, 6}});
  const auto greedy = greedy_decode(s2s, batch, bos, eos, 1);
  for (size_t b = 0; b < 2; ++b) {
    REQUIRE(greedy[b].tokens.size() == 1);
    REQUIRE(greedy[b].tokens[0] != eos);
  }
  for (const int64_t beam : {1, 3}) {
    CAPTURE(beam);
    const auto searched = beam_search(s2s, batch, bos, eos, {1, 1}, {.beam_size = beam});
    for (size_t b = 0; b < 2; ++b) {
      CAPTURE(b);
      CHECK(searched[b].tokens == greedy[b].tokens);
    }
  }
}

TEST_CASE("Seq2SeqTransformer names both batch sizes when they differ") {
  Seq2SeqTransformer s2s(small());
  check_error(
      [&] {
        // batch 2 of length 4, not 2: a swapped size would hide behind equal sizes
        s2s.forward(tensor({{4, 5, 6, 7}, {6, 7, 8, 9}}), tensor({{1}, {1}, {1}}));
      },
      {"source batch 2 and target batch 3 differ"});
}

// Candidates with equal scores are ranked by the smaller token, then the earlier beam, so the
// search is deterministic: with every log-probability equal (a generator of zeros) each step
// extends by token 0 first.
TEST_CASE("beam search breaks exact ties by the smaller token, then the earlier beam") {
  const auto model = eval_s2s(12);
  Seq2SeqTransformer& s2s = *model;
  NoGradGuard no_grad;
  s2s.generator->weight.fill_(0.0f);
  s2s.generator->bias.fill_(0.0f);
  const auto out = beam_search(s2s, tensor({{5, 6, 7}}), 1, 2, 3, 2, 0.0f);
  CHECK(out.tokens == std::vector<int64_t>{0, 0, 0});
  CHECK(out.score == doctest::Approx(3 * -std::log(6.0)).epsilon(1e-5));
}
