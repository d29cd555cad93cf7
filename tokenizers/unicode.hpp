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

// The character classes of Rust's char and regex, which the `tokenizers` library uses.
bool is_white_space(char32_t cp);  // Unicode White_Space (char::is_whitespace, regex \s)
bool is_letter(char32_t cp);       // category L* (\p{L})
bool is_number(char32_t cp);       // category N* (\p{N}, char::is_numeric)
bool is_word_char(char32_t cp);    // regex \w: Alphabetic, marks, Nd, Pc, joiners

// The script a character is written in, by its Unicode name: "Latin", "Cyrillic", "Han";
// "Common" for digits, punctuation and symbols that many scripts use.
std::string script_name(char32_t cp);
// The script of most of the letters of these texts ("Common" when they hold no letter): two
// languages that share it can share one subword vocabulary.
std::string main_script(const std::vector<std::string>& texts);

// The `tokenizers` library's own classes, from the tables of the Rust crate it uses, which
// predate Unicode 10: characters assigned since are none of these.
bool hf_is_control(char32_t cp);          // Cc, Cf or Co, except \t \n \r (Unicode 8)
bool hf_is_punctuation(char32_t cp);      // is_punctuation's rule over Unicode 8's table
bool hf_is_mark(char32_t cp);             // what its StripAccents drops: M* (Unicode 9)
bool hf_is_nonspacing_mark(char32_t cp);  // what its BertNormalizer drops: Mn (Unicode 8)

// Unicode normalization of a span: form is "NFC", "NFD", "NFKC" or "NFKD".
std::u32string normalize(const std::u32string& s, const std::string& form);
// True where a normalization of this form may start a new piece before cp (no mark of cp
// combines with what is before it).
bool has_boundary_before(char32_t cp, const std::string& form);
// The full lower-case mapping of one character (may be longer: U+0130 -> i + U+0307).
std::u32string to_lower(char32_t cp);

std::string to_lower(const std::string& utf8);       // full Unicode case mapping
std::string strip_accents(const std::string& utf8);  // NFD, then drop Mn marks

}  // namespace anatomy::text
