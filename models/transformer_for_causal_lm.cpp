#include "models/transformer_for_causal_lm.hpp"

namespace anatomy::models {

TransformerForCausalLM::TransformerForCausalLM(const TransformerConfig& c) {
  decoder =
      register_module("decoder", std::make_shared<TransformerDecoder>(c, c.vocab_size, false));
  lm_head =
      register_module("lm_head", std::make_shared<nn::Linear>(c.hidden_size, c.vocab_size, false));
  if (c.tie_word_embeddings) lm_head->tie_weight(decoder->embeddings->token_embeddings->weight);
}

Tensor TransformerForCausalLM::forward(const Tensor& input_ids, DecoderCache* cache) {
  return lm_head->forward(decoder->forward(input_ids, Tensor(), Tensor(), Tensor(), cache));
}

}  // namespace anatomy::models
