// The default size of a corpus run's model, chosen for its data and its time budget.
// docs/training.md gives the runs the rule comes from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::training {

// One size a corpus run may get. It trains with its preset's recipe (train_translation.cpp) at
// its own peak learning rate.
struct CorpusSize {
  std::string name;  // the TransformerConfig preset
  // Target tokens one core trains on per second (measured with that recipe on a 2-core AVX-512
  // machine): what the time budget buys.
  double tokens_per_second;
  int64_t min_corpus_tokens;  // a smaller corpus gets a smaller model
  double lr;                  // the peak learning rate, in place of the preset's
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
