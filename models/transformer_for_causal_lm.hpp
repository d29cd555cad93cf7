// TransformerForCausalLM: a decoder-only language model (GPT-style): decoder layers without
// cross-attention, then lm_head giving next-token logits; lm_head may share the token table.
#pragma once

#include "models/transformer_decoder.hpp"

namespace anatomy::models {

class TransformerForCausalLM : public nn::Module {
 public:
  explicit TransformerForCausalLM(const TransformerConfig& config);
  // ids [B, T] -> logits [B, T, V]
  Tensor forward(const Tensor& input_ids, DecoderCache* cache);
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, nullptr); }

  std::shared_ptr<TransformerDecoder> decoder;
  std::shared_ptr<nn::Linear> lm_head;
};

}  // namespace anatomy::models
