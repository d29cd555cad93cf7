#include "tokenizers/truncation.hpp"

#include <fmt/format.h>

#include "autograd/tensor.hpp"

namespace anatomy::text {

std::pair<size_t, size_t> truncate_longest_first(size_t first, size_t second, bool pair,
                                                 int64_t specials, int64_t max_length) {
  if (max_length < 0 || (max_length > 0 && max_length < specials))
    throw Error(fmt::format(
        "encode_plus: max_length must be 0 (no truncation) or at least {}, the special tokens of "
        "{}, got {}",
        specials, pair ? "a pair" : "one sentence", max_length));
  if (max_length == 0) return {first, second};
  const auto budget = static_cast<size_t>(max_length - specials);
  while (first + second > budget) {
    if (first > second)
      --first;
    else
      --second;
  }
  return {first, second};
}

}  // namespace anatomy::text
