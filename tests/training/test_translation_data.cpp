// The translation data's filter: which encoded pairs a model with a given number of positions
// can take.
#include "helpers.hpp"
#include "training/translation_data.hpp"

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
