#include "tokenizers/unicode.hpp"

#include <map>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uscript.h>
#include <unicode/utf8.h>

namespace anatomy::text {

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int32_t n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    out.push_back(c < 0 ? 0xFFFD : static_cast<char32_t>(c));
  }
  return out;
}

std::string to_utf8(char32_t cp) {
  char buf[4];
  int32_t i = 0;
  UBool error = false;
  U8_APPEND(reinterpret_cast<uint8_t*>(buf), i, 4, static_cast<UChar32>(cp), error);
  return error ? std::string("\xEF\xBF\xBD") : std::string(buf, static_cast<size_t>(i));
}

std::string to_utf8(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t c : cps) out += to_utf8(c);
  return out;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (char32_t c : code_points(s)) out.push_back(to_utf8(c));
  return out;
}

bool is_whitespace(char32_t c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return true;
  return u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR;
}

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

bool is_punctuation(char32_t c) {
  // BERT treats every non-letter/number ASCII symbol as punctuation ($, ^, `), Unicode or not.
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126))
    return true;
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_white_space(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool is_letter(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_L_MASK) != 0; }

std::string script_name(char32_t c) {
  UErrorCode status = U_ZERO_ERROR;
  const UScriptCode code = uscript_getScript(static_cast<UChar32>(c), &status);
  const char* name = U_SUCCESS(status) ? uscript_getName(code) : nullptr;
  return name ? name : "Unknown";
}

std::string main_script(const std::vector<std::string>& texts) {
  std::map<UScriptCode, int64_t> letters;
  for (const auto& t : texts)
    for (char32_t c : code_points(t)) {
      UErrorCode status = U_ZERO_ERROR;
      if (is_letter(c)) ++letters[uscript_getScript(static_cast<UChar32>(c), &status)];
    }
  UScriptCode best = USCRIPT_COMMON;
  int64_t most = 0;
  for (const auto& [code, n] : letters)
    if (n > most) best = code, most = n;
  return uscript_getName(best);
}

bool is_number(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0; }

bool is_word_char(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  const uint32_t mask = U_GET_GC_MASK(u);
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) ||
         (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL);
}

namespace {

// The Unicode version that assigned the character (0 for unassigned ones).
int assigned_in(char32_t c) {
  UVersionInfo v;
  u_charAge(static_cast<UChar32>(c), v);
  return v[0];
}

bool assigned_by(char32_t c, int version) {
  const int v = assigned_in(c);
  return v != 0 && v <= version;
}

}  // namespace

bool hf_is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const uint32_t mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  return assigned_by(c, 8) && (mask & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK)) != 0;
}

bool hf_is_punctuation(char32_t c) {
  if (c == 0x166D || c == 0x111C9) return true;  // punctuation then, recategorized since
  return assigned_by(c, 8) && is_punctuation(c);
}

bool hf_is_mark(char32_t c) {
  if (c == 0x1CF2 || c == 0x1CF3) return true;  // marks then, letters since
  if (c == 0x111C9) return false;               // punctuation then, a mark since
  return assigned_by(c, 9) && (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK) != 0;
}

bool hf_is_nonspacing_mark(char32_t c) {
  if (c == 0x1734) return true;                                                 // Mn then, Mc since
  if (c == 0x1885 || c == 0x1886 || c == 0xA9BD || c == 0x111C9) return false;  // Mn since
  return assigned_by(c, 8) && u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK;
}

namespace {

const icu::Normalizer2* normalizer(const std::string& form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  if (form == "NFC") n = icu::Normalizer2::getNFCInstance(status);
  if (form == "NFD") n = icu::Normalizer2::getNFDInstance(status);
  if (form == "NFKC") n = icu::Normalizer2::getNFKCInstance(status);
  if (form == "NFKD") n = icu::Normalizer2::getNFKDInstance(status);
  return U_FAILURE(status) ? nullptr : n;
}

icu::UnicodeString to_icu(const std::u32string& s) {
  return icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(s.data()),
                                       static_cast<int32_t>(s.size()));
}

std::u32string from_icu(const icu::UnicodeString& u) {
  std::u32string out;
  for (int32_t i = 0; i < u.length();) {
    const UChar32 c = u.char32At(i);
    out.push_back(static_cast<char32_t>(c));
    i += U16_LENGTH(c);
  }
  return out;
}

}  // namespace

std::u32string normalize(const std::u32string& s, const std::string& form) {
  const icu::Normalizer2* n = normalizer(form);
  if (n == nullptr) return s;
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString out = n->normalize(to_icu(s), status);
  return U_FAILURE(status) ? s : from_icu(out);
}

bool has_boundary_before(char32_t cp, const std::string& form) {
  const icu::Normalizer2* n = normalizer(form);
  return n == nullptr || n->hasBoundaryBefore(static_cast<UChar32>(cp));
}

std::u32string to_lower(char32_t cp) {
  return from_icu(to_icu(std::u32string(1, cp)).toLower(icu::Locale::getRoot()));
}

std::string to_lower(const std::string& s) {
  std::string out;
  icu::UnicodeString::fromUTF8(s).toLower(icu::Locale::getRoot()).toUTF8String(out);
  return out;
}

std::string strip_accents(const std::string& s) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status)) return s;
  const icu::UnicodeString decomposed = nfd->normalize(icu::UnicodeString::fromUTF8(s), status);
  if (U_FAILURE(status)) return s;
  icu::UnicodeString kept;
  for (int32_t i = 0; i < decomposed.length();) {
    const UChar32 c = decomposed.char32At(i);
    if (u_charType(c) != U_NON_SPACING_MARK) kept.append(c);
    i += U16_LENGTH(c);
  }
  std::string out;
  kept.toUTF8String(out);
  return out;
}

}  // namespace anatomy::text
