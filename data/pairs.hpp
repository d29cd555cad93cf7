// Parallel text: source/target pairs, split into train, valid and test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::data {

struct Pair {
  std::string source, target;
};

struct Splits {
  std::vector<Pair> train, valid, test;
  const std::vector<Pair>& split(const std::string& name) const;  // "train", "valid", "test"
};

// Shuffles deterministically (seed) and cuts off valid and test sets.
Splits split_pairs(std::vector<Pair> pairs, int64_t valid_size, int64_t test_size, uint64_t seed);

}  // namespace anatomy::data
