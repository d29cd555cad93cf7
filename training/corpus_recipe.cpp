#include "training/corpus_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "run_folders/progress_bar.hpp"

namespace anatomy::training {

const std::vector<CorpusSize>& corpus_sizes() {
  // A size pays once its budget buys it about 20 epochs, and a peak learning rate of 2e-3
  // validates higher than the presets' 1e-3: the runs behind both are docs/training.md's "How a
  // corpus run's defaults were chosen".
  static const std::vector<CorpusSize> sizes = {
      {"small", 0, 2e-3},
      {"medium", 100000, 2e-3},
  };
  return sizes;
}

double epochs_in(double seconds, int64_t target_tokens, const SizeCost& cost) {
  if (!(cost.tokens_per_second > 0)) return 0;
  const double tokens = static_cast<double>(std::max<int64_t>(target_tokens, 1));
  return std::max(0.0, seconds) / (tokens / cost.tokens_per_second + cost.epoch_overhead);
}

CorpusPlan plan_corpus_run(int64_t target_tokens_per_epoch, double time_budget, int threads,
                           const std::function<SizeCost(const CorpusSize&)>& measure) {
  const auto& sizes = corpus_sizes();
  CorpusPlan plan{.size = sizes.front(), .threads = std::max(threads, 1)};
  if (!(time_budget > 0)) {
    plan.why = "there is no time budget to size it for";
    return plan;
  }
  // Each size is measured while the ones before it got enough epochs; the smallest always is.
  std::vector<SizeCost> costs;
  std::vector<size_t> which;  // costs[k] is sizes[which[k]]'s
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!costs.empty() && sizes[i].min_corpus_tokens > target_tokens_per_epoch) continue;
    const SizeCost c = measure(sizes[i]);
    plan.measure_seconds += c.seconds;
    plan.measured.emplace_back(sizes[i].name, c.tokens_per_second);
    costs.push_back(c);
    which.push_back(i);
    if (epochs_in(time_budget - plan.measure_seconds, target_tokens_per_epoch, c) < kMinEpochs)
      break;
  }
  // What is left once every measurement is paid for decides, the same for each size.
  const double left = time_budget - plan.measure_seconds;
  size_t chosen = 0;
  for (size_t k = 0; k < costs.size(); ++k)
    if (epochs_in(left, target_tokens_per_epoch, costs[k]) >= kMinEpochs) chosen = k;
  plan.size = sizes[which[chosen]];
  plan.tokens_per_second = costs[chosen].tokens_per_second;
  plan.epoch_overhead = costs[chosen].epoch_overhead;
  plan.epochs = epochs_in(left, target_tokens_per_epoch, costs[chosen]);
  std::string rates;
  for (const auto& [name, rate] : plan.measured)
    rates += fmt::format("{}{} {} tok/s", rates.empty() ? "" : ", ", name, human(rate));
  plan.why = fmt::format(
      "{:.0f} s on {} thread{}, less {:.1f} s of measuring ({}), buy it about {:.0f} epochs of {} "
      "target tokens{}",
      time_budget, plan.threads, plan.threads == 1 ? "" : "s", plan.measure_seconds, rates,
      plan.epochs, target_tokens_per_epoch,
      plan.epochs >= kMinEpochs ? fmt::format(" (the largest size that gets {:g})", kMinEpochs)
                                : " (the smallest size)");
  return plan;
}

std::string describe(const CorpusPlan& plan, double time_budget) {
  const std::string epochs = fmt::format("{:.0f}", plan.epochs);
  return fmt::format("plan: {}, {} tok/s measured on {} thread{}, about {} epoch{} in {}",
                     plan.size.name, human(plan.tokens_per_second), plan.threads,
                     plan.threads == 1 ? "" : "s", epochs, epochs == "1" ? "" : "s",
                     clock(time_budget));
}

}  // namespace anatomy::training
