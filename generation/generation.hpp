// Decoding: turning a trained model's next-token logits into sequences.
//
// Greedy decoding takes the most likely token at each step; beam search keeps the `beam_size`
// best partial sequences; sampling draws from the (temperature, top-k, top-p filtered)
// distribution. With use_cache the decoder feeds only the newest token each step and reuses
// the keys and values of earlier positions (KV cache): the same result, far less work.
#pragma once

#include "models/seq2seq_transformer.hpp"
#include "models/transformer_for_causal_lm.hpp"

namespace anatomy::generation {

using models::Seq2SeqTransformer;
using models::TransformerForCausalLM;

struct Generated {
  std::vector<int64_t> tokens;  // without the start token; ends before the end token
  std::vector<Tensor> logits;   // [V] per step (greedy with output_scores, generate)
  float score = 0.0f;           // sum of log-probabilities (beam search: length-normalized)
};

struct GreedyOptions {
  bool use_cache = true;  // a model whose attention has none (the book's layout) goes without
  // Keep each step's logits in Generated::logits, as Hugging Face's output_scores: to inspect
  // or test them. Off, translating a file copies no [V] row per token.
  bool output_scores = false;
};

// Greedy translation of each source row (ids [B, S], padded with config.pad_token_id), each
// at most max_length tokens long (the end token not counted).
std::vector<Generated> greedy_decode(Seq2SeqTransformer& model, const Tensor& source_ids,
                                     int64_t bos_id, int64_t eos_id, int64_t max_length,
                                     const GreedyOptions& options = {});
// The same with a longest output for each row: row b stops at max_lengths[b] tokens, whatever
// the other rows' lengths, so that its translation does not depend on the batch it is in.
std::vector<Generated> greedy_decode(Seq2SeqTransformer& model, const Tensor& source_ids,
                                     int64_t bos_id, int64_t eos_id,
                                     const std::vector<int64_t>& max_lengths,
                                     const GreedyOptions& options = {});

struct BeamSearchOptions {
  int64_t beam_size = 4;
  // Scores are divided by ((5 + length) / 6)^length_penalty (GNMT's length normalization; 0
  // disables it).
  float length_penalty = 0.6f;
  // true: a sentence stops once beam_size hypotheses have ended (Hugging Face's
  // early_stopping=True). false: it goes on while its best open beam, scored at its present
  // length, still beats the worst of the beam_size best ended ones, which replace worse ones
  // (Hugging Face's default).
  bool early_stopping = false;
  bool use_cache = true;
};

// Beam search for every source row (ids [B, S], padded with config.pad_token_id), row b
// decoding at most max_lengths[b] tokens: the open beams of all rows are one decoder batch
// per step. beam_size 1 equals greedy.
std::vector<Generated> beam_search(Seq2SeqTransformer& model, const Tensor& source_ids,
                                   int64_t bos_id, int64_t eos_id,
                                   const std::vector<int64_t>& max_lengths,
                                   const BeamSearchOptions& options = {});

// The same for one source row ([1, S]).
Generated beam_search(Seq2SeqTransformer& model, const Tensor& source_ids, int64_t bos_id,
                      int64_t eos_id, int64_t max_length, int64_t beam_size,
                      float length_penalty = 0.6f);

struct SamplingOptions {
  float temperature = 1.0f;  // 0: greedy
  int64_t top_k = 0;         // 0: no limit
  float top_p = 1.0f;        // nucleus sampling; 1: no limit
  bool use_cache = true;
};

// Continues `prompt` ([T] ids) by up to max_new_tokens tokens (stops early at stop_id >= 0),
// drawing from the global generator.
Generated generate(TransformerForCausalLM& model, const std::vector<int64_t>& prompt,
                   int64_t max_new_tokens, const SamplingOptions& options = {},
                   int64_t stop_id = -1);

}  // namespace anatomy::generation
