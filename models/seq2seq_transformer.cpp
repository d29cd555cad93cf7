#include "models/seq2seq_transformer.hpp"

#include "models/masks.hpp"

namespace anatomy::models {

Seq2SeqTransformer::Seq2SeqTransformer(const TransformerConfig& c) : config(c) {
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(c));
  decoder =
      register_module("decoder", std::make_shared<TransformerDecoder>(c, c.target_vocab(), true));
  generator =
      register_module("generator", std::make_shared<nn::Linear>(c.hidden_size, c.target_vocab()));
  if (c.share_embeddings)
    decoder->embeddings->token_embeddings->tie_weight(
        encoder->embeddings->token_embeddings->weight);
  if (c.tie_word_embeddings) generator->tie_weight(decoder->embeddings->token_embeddings->weight);
}

std::pair<Tensor, Tensor> Seq2SeqTransformer::encode(const Tensor& source_ids) {
  Tensor mask = padding_mask(source_ids, config.pad_token_id);
  return {encoder->forward(source_ids, mask), mask};
}

Tensor Seq2SeqTransformer::decode(const Tensor& target_ids, const Tensor& memory,
                                  const Tensor& source_mask, DecoderCache* cache) {
  return generator->forward(decoder->forward(target_ids, memory, source_mask, Tensor(), cache));
}

Tensor Seq2SeqTransformer::forward(const Tensor& source_ids, const Tensor& target_ids) {
  if (source_ids.dim() != 2 || target_ids.dim() != 2)
    throw Error(
        fmt::format("Seq2SeqTransformer: expected ids [batch, seq], got source {} and "
                    "target {}",
                    source_ids.shape().str(), target_ids.shape().str()));
  if (source_ids.size(0) != target_ids.size(0))
    throw Error(fmt::format("Seq2SeqTransformer: source batch {} and target batch {} differ",
                            source_ids.size(0), target_ids.size(0)));
  auto [memory, mask] = encode(source_ids);
  return decode(target_ids, memory, mask);
}

}  // namespace anatomy::models
