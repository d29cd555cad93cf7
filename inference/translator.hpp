// Translator: a trained translation model with its tokenizers, loaded from a run folder
// (anatomy train --out DIR), ready to translate: what `anatomy translate`, `evaluate`,
// `attention` and the tutorials use.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "data/batching.hpp"
#include "data/pairs.hpp"
#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::training {

// A trained translation model with its tokenizers, ready to translate.
struct Translator {
  models::TransformerConfig config;
  std::shared_ptr<models::Seq2SeqTransformer> model;
  std::unique_ptr<text::Tokenizer> source, target;
  int64_t bos = 2, eos = 3;
  // What `translate`, `evaluate` and `attention` do without --beam and --length-penalty: the
  // decoding the run chose on its validation split (run.json's "decoding", see
  // choose_decoding), else beam 4 for a corpus (as Marian and fairseq users expect) and greedy
  // for a toy task.
  int64_t default_beam = 1;
  float default_length_penalty = 0.6f;

  static Translator load(const std::string& dir);
  // Source ids, or an error when the text is longer than the model's positions.
  std::vector<int64_t> encode_source(const std::string& text) const;
  std::vector<std::string> translate(const std::vector<std::string>& texts, int64_t beam = 1,
                                     float length_penalty = 0.6f, int64_t max_length = 0) const;
  // The same translations as target token ids, before decoding to text (without BOS and EOS).
  std::vector<std::vector<int64_t>> translate_ids(const std::vector<std::string>& texts,
                                                  int64_t beam = 1, float length_penalty = 0.6f,
                                                  int64_t max_length = 0) const;
};

struct Encoded;
using Metrics = nlohmann::ordered_json;

// The loss of a batch of pairs (cross-entropy over target tokens, [PAD] ignored).
Tensor translation_loss(models::Seq2SeqTransformer& model, const data::Batch& b, float smoothing,
                        const std::string& reduction);
// What every epoch of a translation run reports: validation loss (no smoothing), and BLEU and
// exact match of greedy translations of the held-out pairs.
Metrics validate(Translator& tr, const Encoded& valid, int64_t max_tokens);

// How a run decodes by default, chosen on held-out pairs: greedy, or beam 4 with the length
// penalty (GNMT's normalization exponent) that scores best. Beam search with too weak a
// normalization prefers short outputs, which BLEU's brevity penalty punishes; the exponent that
// suits a model depends on how sure it is, so it is measured, on validation (never on test).
struct DecodingChoice {
  int64_t beam = 1;
  float length_penalty = 0.6f;
  double greedy_bleu = 0, beam_bleu = 0;  // beam 4's at its best length penalty
  // Every candidate tried: {beam, length penalty, BLEU}.
  std::vector<std::tuple<int64_t, float, double>> tried;
};
// Tries greedy and beam 4 at each of `penalties` on `pairs`; beam 4 is the choice when its best
// penalty scores at least greedy's BLEU.
DecodingChoice choose_decoding(const Translator& tr, const std::vector<data::Pair>& pairs,
                               const std::vector<float>& penalties = {0.6f, 1.0f, 1.5f, 2.0f});

// The best checkpoint by `select`: "bleu" (ties: lower loss), "loss", or "exact_match" (ties:
// BLEU, then loss; for outputs of a word or two, whose BLEU is 0 whatever their quality).
std::function<bool(const Metrics& now, const Metrics& best)> better_by(const std::string& select);
// "validation BLEU", "validation loss", "validation exact match".
std::string describe_select(const std::string& select);

}  // namespace anatomy::training
