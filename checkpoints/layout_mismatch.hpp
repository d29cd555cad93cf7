#pragma once
// What a Hugging Face layout cannot hold: BERT and GPT-2 each refuse a config they would compute
// differently, and both refuse the same swapped parts (norm, feed-forward, positions, attention,
// activation). bert_mismatch and gpt2_mismatch check their own fields, then these.
#include "models/config.hpp"

#include <string>

namespace anatomy::checkpoints {

// "field is value (model: expected)": how a mismatch is told.
std::string describe_mismatch(const std::string& field, const std::string& value,
                              const std::string& model, const std::string& expected);

// The first of the swapped parts that `model` ("BERT", "GPT-2") has no weights or code for, told
// as describe_mismatch does; "" when it has them all.
std::string swapped_part_mismatch(const models::TransformerConfig& c, const std::string& model);

}  // namespace anatomy::checkpoints
