#include "data/pairs.hpp"

#include <fmt/format.h>

#include "autograd/random.hpp"
#include "autograd/tensor.hpp"

namespace anatomy::data {

const std::vector<Pair>& Splits::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "valid") return valid;
  if (name == "test") return test;
  throw Error(fmt::format("split: unknown split '{}' (train, valid or test)", name));
}

Splits split_pairs(std::vector<Pair> pairs, int64_t valid_size, int64_t test_size, uint64_t seed) {
  Generator g(seed);
  for (size_t i = pairs.size(); i > 1; --i) std::swap(pairs[i - 1], pairs[g.next_u32() % i]);
  Splits s;
  const auto n = static_cast<int64_t>(pairs.size());
  if (valid_size + test_size >= n)
    throw Error(fmt::format("split: {} pairs are too few for {} valid and {} test pairs", n,
                            valid_size, test_size));
  s.test.assign(pairs.begin(), pairs.begin() + test_size);
  s.valid.assign(pairs.begin() + test_size, pairs.begin() + test_size + valid_size);
  s.train.assign(pairs.begin() + test_size + valid_size, pairs.end());
  return s;
}

}  // namespace anatomy::data
