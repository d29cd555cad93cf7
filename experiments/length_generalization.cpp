// Length generalization: which way of giving a Transformer positions still works on sequences
// longer than any it was trained on? Trains the toy task `reverse` (or `copy`), 4-12 symbols,
// once per position scheme with the same time budget and seed, then measures exact match on the
// held-out test split (4-12 symbols, as trained) and on new sequences of 13-16 and 17-24 symbols.
// Learned absolute positions have never seen a position past 2 + 12 (their rows there are
// untrained); sinusoids are defined everywhere but unseen; relative_key's distance vectors past
// 12 are untrained too; ALiBi and rotary only ever see distances, with no learned table.
//
//   length_generalization [--task reverse] [--seconds 90] [--schemes absolute,...] [--out DIR]
//
// docs/coursework.md quotes this program's table (make length-generalization).
#include <fmt/format.h>

#include <filesystem>

#include "autograd/random.hpp"
#include "data/tasks.hpp"
#include "inference/translator.hpp"
#include "training/train_options.hpp"

using namespace anatomy;

namespace {

// Exact match of greedy translations, in percent.
double exact_match(const training::Translator& tr, const std::vector<data::Pair>& pairs) {
  std::vector<std::string> sources;
  for (const auto& p : pairs) sources.push_back(p.source);
  const auto hyps = tr.translate(sources);
  int64_t right = 0;
  for (size_t i = 0; i < pairs.size(); ++i) right += hyps[i] == pairs[i].target;
  return 100.0 * static_cast<double>(right) / static_cast<double>(pairs.size());
}

// `count` sequences of min..max symbols a..t and their copies or reversals.
std::vector<data::Pair> longer(bool reverse, int64_t min, int64_t max, int64_t count) {
  Generator g(12345 + static_cast<uint64_t>(min));
  std::vector<data::Pair> out;
  for (int64_t n = 0; n < count; ++n) {
    const int64_t len = min + g.next_u32() % (max - min + 1);
    std::vector<std::string> sym;
    for (int64_t i = 0; i < len; ++i)
      sym.push_back(std::string(1, static_cast<char>('a' + g.next_u32() % 20)));
    data::Pair p;
    for (int64_t i = 0; i < len; ++i) {
      p.source += (i ? " " : "") + sym[i];
      p.target += (i ? " " : "") + sym[reverse ? len - 1 - i : i];
    }
    out.push_back(p);
  }
  return out;
}

double parse_seconds(const std::string& value) {
  size_t used = 0;
  double s = -1;
  try {
    s = std::stod(value, &used);
  } catch (const std::exception&) {
  }
  if (used != value.size() || !(s >= 1 && s <= 86400))
    throw Error(
        fmt::format("--seconds: expected a number of seconds in [1, 86400], got '{}'", value));
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= s.size();) {
    const size_t end = std::min(s.find(',', at), s.size());
    out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

int run(int argc, char** argv) {
  std::string task = "reverse", out = "runs/length-generalization";
  std::string schemes = "absolute,sinusoidal,relative_key,alibi,rotary";
  double seconds = 90;
  if (argc % 2 == 0) {
    fmt::print(stderr, "length_generalization: option {} needs a value\n", argv[argc - 1]);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--task")
      task = value;
    else if (flag == "--seconds")
      seconds = parse_seconds(value);
    else if (flag == "--schemes")
      schemes = value;
    else if (flag == "--out")
      out = value;
    else {
      fmt::print(stderr, "unknown option {} (--task, --seconds, --schemes, --out)\n", flag);
      return 2;
    }
  }
  if (task != "reverse" && task != "copy") {
    fmt::print(stderr, "--task must be reverse or copy\n");
    return 2;
  }
  const auto test = data::make_task(task, 0).splits.test;
  const auto mid = longer(task == "reverse", 13, 16, 300),
             far = longer(task == "reverse", 17, 24, 300);
  std::vector<std::string> rows;
  for (const auto& scheme : split(schemes)) {
    const std::string dir = out + "/" + task + "-" + scheme;
    std::filesystem::remove_all(dir);
    training::TrainOptions o;
    o.task = task;
    o.out = dir;
    o.time_budget = seconds;
    o.epochs = 1000;  // the budget ends it (or 100% validation exact match)
    // Room for 24 symbols plus BOS/EOS; the training data never uses more than 14 positions.
    o.set = {"position_embedding_type=" + scheme, "max_position_embeddings=64"};
    fmt::print("\n=== {} with {} positions, {} s ===\n", task, scheme, seconds);
    if (training::train(o) != 0) return 1;
    const auto tr = training::Translator::load(dir);
    rows.push_back(fmt::format("| {} | {:.1f}% | {:.1f}% | {:.1f}% |", scheme,
                               exact_match(tr, test), exact_match(tr, mid), exact_match(tr, far)));
  }
  fmt::print("\n{}: trained on 4-12 symbols, {} s each; exact match (greedy)\n\n", task, seconds);
  fmt::print(
      "| positions | test, 4-12 symbols | 13-16 symbols | 17-24 symbols |\n|---|---|---|---|\n");
  for (const auto& r : rows) fmt::print("{}\n", r);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    fmt::print(stderr, "length_generalization: {}\n", e.what());
    return 1;
  }
}
