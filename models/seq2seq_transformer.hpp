// Seq2SeqTransformer: the full encoder-decoder model of "Attention Is All You Need": the
// encoder reads the source, the decoder writes the target one token at a time while attending
// to the encoder's output, and the generator turns hidden states into target-vocabulary logits.
// Source and target vocabularies are separate or shared (share_embeddings); the generator may
// reuse the decoder's token table (tie_word_embeddings).
#pragma once

#include "models/transformer_decoder.hpp"
#include "models/transformer_encoder.hpp"

namespace anatomy::models {

class Seq2SeqTransformer : public nn::Module {
 public:
  explicit Seq2SeqTransformer(const TransformerConfig& config);
  // Source ids [B, S] -> (memory [B, S, E], source key mask [B, 1, S]); pad tokens are masked.
  std::pair<Tensor, Tensor> encode(const Tensor& source_ids);
  // Target ids [B, T] -> logits [B, T, V] (V: the target vocabulary).
  Tensor decode(const Tensor& target_ids, const Tensor& memory, const Tensor& source_mask,
                DecoderCache* cache = nullptr);
  using nn::Module::forward;  // visible, not hidden: see TransformerDecoderLayer
  Tensor forward(const Tensor& source_ids, const Tensor& target_ids);

  TransformerConfig config;
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
  std::shared_ptr<nn::Linear> generator;
};

}  // namespace anatomy::models
