// The defaults of a corpus run, chosen for its data and its time budget: the model's size, and
// the batch, learning rate and warmup that go with it. docs/training.md gives the runs each
// choice comes from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::training {

// One size a corpus run may get, and the training recipe measured with it.
struct CorpusSize {
  std::string name;  // the TransformerConfig preset
  // Target tokens one core trains on per second (measured with the recipe below on a 2-core
  // AVX-512 machine): what the time budget buys.
  double tokens_per_second;
  int64_t min_corpus_tokens;  // a smaller corpus gets a smaller model
  int64_t max_tokens, warmup;
  double lr;
};

// The sizes, smallest first.
const std::vector<CorpusSize>& corpus_sizes();

// The run's size: the largest whose budget buys at least `kMinEpochs` epochs of the corpus on
// `threads` cores, among those the corpus is large enough for; without a budget, the smallest.
// `why` says how it was chosen, for the log.
struct CorpusChoice {
  CorpusSize size;
  std::string why;
};
inline constexpr double kMinEpochs = 20;
CorpusChoice choose_corpus_size(int64_t target_tokens_per_epoch, double time_budget, int threads);

}  // namespace anatomy::training
