// Built-in toy translation tasks, generated in code from a seed, with train / valid / test
// splits that never share a source sentence:
//   copy      "c f a k" -> "c f a k"             (the Annotated Transformer's first test)
//   reverse   "c f a k" -> "k a f c"
//   numbers   "four thousand three hundred twenty-one" -> "viertausenddreihunderteinundzwanzig"
//             (English number words to German: reordered units and tens, one compound word)
//   dates     "March 3, 2021" -> "2021-03-03"
//   toylang   "the big dog followed a small cat" -> "la hundo granda katon malgrandan sekvis"
//             (a small rule-based language: subject-object-verb order, adjectives after the
//             noun, plural -j, accusative -n, tense -as / -is); a noun phrase is drawn
//             definite and with an adjective half of the time each, plural a third, and
//             repeated sentences are dropped
#pragma once

#include "data/pairs.hpp"

namespace anatomy::data {

struct Task {
  std::string name, description;
  Splits splits;
  std::string source_tokenizer, target_tokenizer;  // the kinds that suit the task
};

Task make_task(const std::string& name, uint64_t seed = 0);
const std::vector<std::string>& task_names();

// The classification toy task "majority": sequences of 5-15 symbols a..h, labelled by which of
// a (0), b (1), c (2) occurs most often (ties are never generated); all distinct.
struct LabeledText {
  std::string text;
  int64_t label;
};
std::vector<LabeledText> majority_examples(int64_t count, uint64_t seed = 0);

// The pieces, for tests and tutorials.
std::string english_number(int64_t n);  // 1 <= n <= 999999
std::string german_number(int64_t n);
int days_in_month(int year, int month);  // month 1..12, Gregorian leap years

}  // namespace anatomy::data
