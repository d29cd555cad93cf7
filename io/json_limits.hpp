// json_depth_limit: a parser callback for nlohmann::json::parse that refuses JSON nested deeper
// than max_depth. nlohmann parses without recursion, but destroying or printing (dump()) a value
// nested 100,000 levels deep recurses once per level and overflows the stack: a crafted
// config.json or safetensors header must get an error, not a crash.
//
//   nlohmann::json::parse(text, json_depth_limit("config.json"));
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "autograd/tensor.hpp"

namespace anatomy {

inline nlohmann::json::parser_callback_t json_depth_limit(const std::string& source,
                                                          int max_depth = 64) {
  return [source, max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_depth)
      throw Error(fmt::format("{}: JSON nested deeper than {} levels", source, max_depth));
    return true;
  };
}

}  // namespace anatomy
