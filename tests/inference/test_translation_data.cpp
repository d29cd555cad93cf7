// The translation data's filter, which encoded pairs a model with a given number of positions
// can take, and the order an epoch's batches come in.
#include <algorithm>

#include "helpers.hpp"
#include "inference/translation_data.hpp"

using namespace anatomy;

namespace {

// Pairs with the given token counts of source and target; each pair's texts say which it is.
training::Encoded pairs_of(const std::vector<std::pair<size_t, size_t>>& lengths) {
  training::Encoded e;
  for (const auto& [s, t] : lengths) {
    e.src.emplace_back(s, 5);
    e.tgt.emplace_back(t, 6);
    e.sources.push_back(std::to_string(s) + "+" + std::to_string(t));
    e.references.push_back("ref " + std::to_string(s) + "+" + std::to_string(t));
  }
  return e;
}

}  // namespace

// A source fits in max_positions tokens; a target needs one more for its end token. Each clause
// on its own, at its boundary: a filter that forgot the end token, compared with < instead of
// <=, or looked at one side only keeps or drops the wrong pair.
TEST_CASE("drop_too_long: a source fits in the positions, a target with its end token does") {
  training::Encoded e = pairs_of({
      {8, 7},  // both at the limit: kept
      {9, 1},  // the source one over: dropped
      {1, 8},  // the target with its end token one over: dropped
      {2, 3},  // short: kept
      {8, 8},  // the source at the limit, the target one over: dropped
  });
  CHECK(training::drop_too_long(e, 8) == 3);
  CHECK(e.sources == std::vector<std::string>{"8+7", "2+3"});
  CHECK(e.references == std::vector<std::string>{"ref 8+7", "ref 2+3"});
  REQUIRE(e.src.size() == 2);
  REQUIRE(e.tgt.size() == 2);
  CHECK(e.src[0].size() == 8);
  CHECK(e.tgt[0].size() == 7);
  CHECK(e.src[1].size() == 2);
  CHECK(e.tgt[1].size() == 3);
  // Nothing to drop: the pairs stay as they were, in order.
  training::Encoded all = pairs_of({{3, 2}, {1, 1}});
  CHECK(training::drop_too_long(all, 8) == 0);
  CHECK(all.sources == std::vector<std::string>{"3+2", "1+1"});
}

// Each epoch of a run and each seed shuffles apart: a seed that left the batch order alone (or
// let every small seed share one order) would train every run of a task on the same sequence.
TEST_CASE("epoch_batches: each seed and each epoch has an order of its own, the same every time") {
  std::vector<std::pair<size_t, size_t>> lengths;
  for (size_t i = 0; i < 60; ++i) lengths.emplace_back(3 + i % 7, 2 + i % 5);
  const training::Encoded train = pairs_of(lengths);
  auto order = [&](uint64_t seed, int64_t epoch) {
    std::vector<int64_t> rows;
    for (const auto& b : training::epoch_batches(train, 40, seed, epoch))
      rows.insert(rows.end(), b.rows.begin(), b.rows.end());
    return rows;
  };
  const auto first = order(1, 0);
  REQUIRE(first.size() == 60);
  CHECK(order(1, 0) == first);
  CHECK(order(2, 0) != first);
  CHECK(order(1, 1) != first);
  CHECK(order(2, 1) != order(1, 1));
  CHECK(order(0, 1) != first);  // seed and epoch do not simply add
  // Every pair once an epoch.
  auto sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 60; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
}
