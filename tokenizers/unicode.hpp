// The Unicode facts the tokenizers need, from ICU: code points of UTF-8 text, general
// categories (BERT's whitespace / control / punctuation tests), lower-casing and accent
// stripping (NFD, then drop combining marks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::text {

// UTF-8 text as code points; invalid bytes become U+FFFD (as Python's errors="replace").
std::vector<char32_t> code_points(const std::string& utf8);
std::string to_utf8(char32_t cp);
std::string to_utf8(const std::vector<char32_t>& cps);
// Each code point as its own UTF-8 string.
std::vector<std::string> utf8_chars(const std::string& utf8);

bool is_whitespace(char32_t cp);   // BERT's: space, \t, \n, \r, or category Zs
bool is_control(char32_t cp);      // BERT's: category C*, except \t \n \r
bool is_punctuation(char32_t cp);  // BERT's: ASCII non-alphanumeric symbols, or category P*
bool is_cjk(char32_t cp);          // the CJK Unified Ideograph blocks

std::string to_lower(const std::string& utf8);       // full Unicode case mapping
std::string strip_accents(const std::string& utf8);  // NFD, then drop Mn marks

}  // namespace anatomy::text
