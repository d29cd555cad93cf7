#include "data/tasks.hpp"

#include <fmt/format.h>

#include <functional>
#include <set>

#include "autograd/random.hpp"
#include "autograd/tensor.hpp"

namespace anatomy::data {

namespace {

const char* kOnes[] = {"",        "one",     "two",       "three",    "four",
                       "five",    "six",     "seven",     "eight",    "nine",
                       "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                       "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* kTens[] = {"",      "",      "twenty",  "thirty", "forty",
                       "fifty", "sixty", "seventy", "eighty", "ninety"};
const char* kEinheiten[] = {"",         "ein",      "zwei",     "drei",     "vier",
                            "fünf",     "sechs",    "sieben",   "acht",     "neun",
                            "zehn",     "elf",      "zwölf",    "dreizehn", "vierzehn",
                            "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"};
const char* kZehner[] = {"",        "",        "zwanzig", "dreißig", "vierzig",
                         "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"};

std::string english_below_1000(int64_t n) {
  std::vector<std::string> parts;
  if (n >= 100) parts.push_back(std::string(kOnes[n / 100]) + " hundred");
  n %= 100;
  if (n >= 20)
    parts.push_back(std::string(kTens[n / 10]) + (n % 10 ? std::string("-") + kOnes[n % 10] : ""));
  else if (n > 0)
    parts.push_back(kOnes[n]);
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : " ") + p;
  return s;
}

// German below 1000 inside a compound: "ein" for 1 ("einhundert", "eintausend").
std::string german_below_1000(int64_t n) {
  std::string s;
  if (n >= 100) s += std::string(kEinheiten[n / 100]) + "hundert";
  n %= 100;
  if (n >= 20)
    s += (n % 10 ? std::string(kEinheiten[n % 10]) + "und" : "") + kZehner[n / 10];
  else if (n > 0)
    s += kEinheiten[n];
  return s;
}

std::vector<Pair> unique_pairs(int64_t count, Generator& g,
                               const std::function<Pair(Generator&)>& make) {
  std::set<std::string> seen;
  std::vector<Pair> out;
  for (int64_t tries = 0; static_cast<int64_t>(out.size()) < count && tries < count * 20; ++tries) {
    Pair p = make(g);
    if (seen.insert(p.source).second) out.push_back(std::move(p));
  }
  return out;
}

Pair symbol_sequence(Generator& g, bool reverse) {
  const int64_t len = 4 + g.next_u32() % 9;  // 4..12 symbols
  std::vector<std::string> sym;
  for (int64_t i = 0; i < len; ++i)
    sym.push_back(std::string(1, static_cast<char>('a' + g.next_u32() % 20)));
  std::string src, tgt;
  for (int64_t i = 0; i < len; ++i) {
    src += (i ? " " : "") + sym[i];
    tgt += (i ? " " : "") + sym[reverse ? len - 1 - i : i];
  }
  return {src, tgt};
}

const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                         "July",    "August",   "September", "October", "November", "December"};

Pair date(Generator& g) {
  const int year = 1900 + static_cast<int>(g.next_u32() % 200);
  const int month = 1 + static_cast<int>(g.next_u32() % 12);
  const int day = 1 + static_cast<int>(g.next_u32() % days_in_month(year, month));
  return {fmt::format("{} {}, {}", kMonths[month - 1], day, year),
          fmt::format("{:04}-{:02}-{:02}", year, month, day)};
}

// The toy language: English SVO with articles -> SOV, adjective after noun, -j plural,
// -n accusative, verb -as (present) / -is (past), "la" for "the", nothing for "a".
struct Noun {
  const char *singular, *plural, *toy;
};
struct Word {
  const char *en, *toy;
};
const Noun kNouns[] = {{"dog", "dogs", "hundo"},
                       {"cat", "cats", "kato"},
                       {"bird", "birds", "birdo"},
                       {"man", "men", "viro"},
                       {"woman", "women", "ino"},
                       {"child", "children", "infano"},
                       {"horse", "horses", "ĉevalo"},
                       {"fish", "fish", "fiŝo"},
                       {"teacher", "teachers", "instruisto"},
                       {"farmer", "farmers", "farmisto"}};
const Word kAdjectives[] = {{"big", "granda"},  {"small", "malgranda"}, {"red", "ruĝa"},
                            {"old", "maljuna"}, {"young", "juna"},      {"happy", "feliĉa"}};
const Word kVerbs[] = {{"like", "ŝat"},  {"watch", "rigard"}, {"follow", "sekv"},
                       {"help", "help"}, {"call", "vok"},     {"visit", "vizit"}};

// An English noun phrase and its toy-language form (object: accusative -n).
std::string noun_phrase(Generator& g, bool object, bool& plural, std::string& toy) {
  const bool definite = g.next_u32() % 2, adjective = g.next_u32() % 2;
  plural = g.next_u32() % 3 == 0;
  const Noun& n = kNouns[g.next_u32() % 10];
  const Word* a = adjective ? &kAdjectives[g.next_u32() % 6] : nullptr;
  std::string en = definite ? "the" : plural ? "some" : "a";
  if (a) en += std::string(" ") + a->en;
  en += std::string(" ") + (plural ? n.plural : n.singular);
  const std::string suffix = std::string(plural ? "j" : "") + (object ? "n" : "");
  toy = (definite ? std::string("la ") : "") + n.toy + suffix;
  if (a) toy += std::string(" ") + a->toy + suffix;
  return en;
}

Pair toylang(Generator& g) {
  std::string subj_toy, obj_toy;
  bool subj_plural = false, obj_plural = false;
  const std::string subj = noun_phrase(g, false, subj_plural, subj_toy);
  const std::string obj = noun_phrase(g, true, obj_plural, obj_toy);
  const bool past = g.next_u32() % 2;
  const Word& v = kVerbs[g.next_u32() % 6];
  std::string verb = v.en;
  if (past)
    verb += verb.back() == 'e' ? "d" : "ed";
  else if (!subj_plural)
    verb += verb.back() == 'h' ? "es" : "s";
  return {subj + " " + verb + " " + obj,
          subj_toy + " " + obj_toy + " " + v.toy + (past ? "is" : "as")};
}

}  // namespace

int days_in_month(int year, int month) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12)
    throw Error(fmt::format("days_in_month: month {} is outside 1..12", month));
  // Gregorian: every 4th year, but not every 100th, but every 400th (2000 is, 1900 is not).
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return days[month - 1] + (month == 2 && leap ? 1 : 0);
}

std::vector<LabeledText> majority_examples(int64_t count, uint64_t seed) {
  Generator g(seed * 31 + 7);
  std::set<std::string> seen;
  std::vector<LabeledText> out;
  while (static_cast<int64_t>(out.size()) < count) {
    const int64_t len = 5 + g.next_u32() % 11;
    std::string s;
    int64_t counts[3] = {0, 0, 0};
    for (int64_t i = 0; i < len; ++i) {
      const char c = static_cast<char>('a' + g.next_u32() % 8);
      if (c <= 'c') ++counts[c - 'a'];
      if (i) s += ' ';
      s += c;
    }
    const int64_t best = std::max({counts[0], counts[1], counts[2]});
    if (best == 0 || (counts[0] == best) + (counts[1] == best) + (counts[2] == best) > 1) continue;
    if (!seen.insert(s).second) continue;
    out.push_back({s, counts[0] == best ? 0 : counts[1] == best ? 1 : 2});
  }
  return out;
}

std::string english_number(int64_t n) {
  if (n < 1 || n > 999999) throw Error(fmt::format("english_number: {} is outside 1..999999", n));
  std::string s;
  if (n >= 1000) s = english_below_1000(n / 1000) + " thousand";
  if (n % 1000) {
    if (!s.empty()) s += ' ';
    s += english_below_1000(n % 1000);
  }
  return s;
}

std::string german_number(int64_t n) {
  if (n < 1 || n > 999999) throw Error(fmt::format("german_number: {} is outside 1..999999", n));
  std::string s;
  if (n >= 1000) s = german_below_1000(n / 1000) + "tausend";
  s += german_below_1000(n % 1000);
  if (n % 100 == 1) s += "s";  // "eins", "einhunderteins", "eintausendeins": a final 1 is "eins"
  return s;
}

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names{"copy", "reverse", "numbers", "dates", "toylang"};
  return names;
}

Task make_task(const std::string& name, uint64_t seed) {
  Generator g(seed * 7919 + 17);
  Task t;
  t.name = name;
  if (name == "copy" || name == "reverse") {
    const bool rev = name == "reverse";
    t.description =
        rev ? "reverse a sequence of 4-12 symbols a..t" : "copy a sequence of 4-12 symbols a..t";
    t.splits =
        split_pairs(unique_pairs(20000, g, [&](Generator& r) { return symbol_sequence(r, rev); }),
                    500, 500, seed);
    t.source_tokenizer = t.target_tokenizer = "word";
  } else if (name == "numbers") {
    t.description = "English number words to German number words (1..9999)";
    std::vector<Pair> all;
    for (int64_t n = 1; n <= 9999; ++n) all.push_back({english_number(n), german_number(n)});
    t.splits = split_pairs(std::move(all), 500, 500, seed);
    t.source_tokenizer = "word";
    t.target_tokenizer = "bpe";  // learns the morphemes: drei, hundert, und, zwanzig, tausend
  } else if (name == "dates") {
    t.description = "English dates to ISO 8601 (years 1900-2099)";
    t.splits = split_pairs(unique_pairs(20000, g, date), 500, 500, seed);
    t.source_tokenizer = t.target_tokenizer = "char";
  } else if (name == "toylang") {
    t.description = "English to a small rule-based SOV language with inflection";
    t.splits = split_pairs(unique_pairs(20000, g, toylang), 500, 500, seed);
    t.source_tokenizer = t.target_tokenizer = "word";
  } else {
    throw Error(fmt::format("unknown task '{}' (copy, reverse, numbers, dates, toylang)", name));
  }
  return t;
}

}  // namespace anatomy::data
