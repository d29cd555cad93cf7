// The default size of a corpus run's model and the epochs it plans, from its data, its time
// budget and what each size costs on the machine the run is on (measured by the run itself).
// docs/training.md gives the runs the rule comes from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace anatomy::training {

// One size a corpus run may get. It trains with its preset's recipe (train_translation.cpp) at
// its own peak learning rate. The sizes cost more per token in their order: a size that is too
// slow makes every later one too slow as well.
struct CorpusSize {
  std::string name;           // the TransformerConfig preset
  int64_t min_corpus_tokens;  // a smaller corpus gets a smaller model
  double lr;                  // the peak learning rate, in place of the preset's
};

// The sizes, smallest first.
const std::vector<CorpusSize>& corpus_sizes();

// What one size costs on this machine, with the run's batches and threads.
struct SizeCost {
  double tokens_per_second =
      0;                      // target tokens a training step (forward, backward, optimizer) takes
  double epoch_overhead = 0;  // seconds each epoch adds to its training: its evaluation and saves
  double seconds = 0;         // what measuring it took, out of the budget
};

// How a budget-long corpus run spends its budget.
struct CorpusPlan {
  CorpusSize size;
  int threads = 1;
  double tokens_per_second = 0;  // the chosen size's, as measured (0: nothing was measured)
  double epoch_overhead = 0;     // the chosen size's seconds of evaluation and saving per epoch
  double measure_seconds = 0;    // the budget the measurements took
  double epochs = 0;             // what the rest of the budget buys (0: no budget)
  // Each measured size's tokens per second, smallest first.
  std::vector<std::pair<std::string, double>> measured;
  std::string why;  // how the size was chosen, for the log
};

// The run's size: the largest whose measured cost leaves the budget (after the measurements)
// at least `kMinEpochs` epochs of the corpus, among those the corpus is large enough for; and
// the epochs that buys. `measure` is called for the sizes in their order and stops at the first
// that gets fewer than `kMinEpochs` (the later ones cost more). Without a budget, the smallest,
// and nothing is measured.
inline constexpr double kMinEpochs = 20;
CorpusPlan plan_corpus_run(int64_t target_tokens_per_epoch, double time_budget, int threads,
                           const std::function<SizeCost(const CorpusSize&)>& measure);

// The epochs `seconds` buy at `cost`: each epoch trains `target_tokens` and then evaluates.
double epochs_in(double seconds, int64_t target_tokens, const SizeCost& cost);

// "plan: medium, 41.2k tok/s measured on 2 threads, about 23 epochs in 15:00": the log's line.
std::string describe(const CorpusPlan& plan, double time_budget);

}  // namespace anatomy::training
