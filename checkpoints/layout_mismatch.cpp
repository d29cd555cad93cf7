#include "checkpoints/layout_mismatch.hpp"

#include <fmt/format.h>

namespace anatomy::checkpoints {

std::string describe_mismatch(const std::string& field, const std::string& value,
                              const std::string& model, const std::string& expected) {
  return fmt::format("{} is {} ({}: {})", field, value, model, expected);
}

std::string swapped_part_mismatch(const models::TransformerConfig& c, const std::string& model) {
  const auto differs = [&](const std::string& field, const std::string& value,
                           const std::string& expected) {
    return describe_mismatch(field, value, model, expected);
  };
  if (c.norm_type != "layer_norm") return differs("norm_type", c.norm_type, "layer_norm");
  if (c.ffn_type != "feed_forward") return differs("ffn_type", c.ffn_type, "feed_forward");
  if (c.position_embedding_type != "absolute")
    return differs("position_embedding_type", c.position_embedding_type, "absolute");
  if (c.attention_type != "fused" && c.attention_type != "book")
    return differs("attention_type", c.attention_type, "fused or book");
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "relu")
    return differs("hidden_act", c.hidden_act, "gelu, gelu_new or relu");
  return "";
}

}  // namespace anatomy::checkpoints
