// Truncation to a model's max_length, as Hugging Face's tokenizers do it with
// truncation="longest_first": one token at a time from the end of the longer sequence (of two
// equally long ones, the second), until both, with the special tokens around them, fit.
// BertTokenizer and the tokenizer.json pipeline both truncate here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace anatomy::text {

// How many tokens of each sequence stay (second is 0 without a pair). `specials` is the number
// of special tokens added around them ([CLS] a [SEP] b [SEP]: 3). max_length 0 keeps every
// token; below `specials` it is an Error naming encode_plus's max_length.
std::pair<size_t, size_t> truncate_longest_first(size_t first, size_t second, bool pair,
                                                 int64_t specials, int64_t max_length);

}  // namespace anatomy::text
