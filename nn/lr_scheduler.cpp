#include "nn/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace anatomy::nn {

NoamSchedule::NoamSchedule(Optimizer& opt, int64_t d_model_, int64_t warmup, double factor_)
    : LRScheduler(opt), d_model(d_model_), warmup_steps(warmup), factor(factor_) {
  if (d_model <= 0 || warmup <= 0)
    throw Error(fmt::format("NoamSchedule: d_model and warmup_steps must be positive (got {}, {})",
                            d_model, warmup));
  start();
}

double NoamSchedule::lr_at(int64_t step) const {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return factor * std::pow(static_cast<double>(d_model), -0.5) *
         std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup_steps), -1.5));
}

WarmupDecaySchedule::WarmupDecaySchedule(Optimizer& opt, double peak, int64_t warmup, int64_t total,
                                         Decay d, double min)
    : LRScheduler(opt),
      peak_lr(peak),
      warmup_steps(warmup),
      total_steps(total),
      decay(d),
      min_lr(min) {
  if (warmup < 0 || total < warmup)
    throw Error(
        fmt::format("WarmupDecaySchedule: need 0 <= warmup_steps <= total_steps (got {}, "
                    "{})",
                    warmup, total));
  start();
}

double WarmupDecaySchedule::lr_at(int64_t step) const {
  if (step < warmup_steps)
    return peak_lr * static_cast<double>(step) /
           static_cast<double>(std::max<int64_t>(1, warmup_steps));
  // The decay has ended at total_steps, also when there is no decay phase (warmup_steps ==
  // total_steps, where Hugging Face's linear schedule is 0 there too). Before it,
  // total_steps - warmup_steps >= 1.
  if (step >= total_steps) return min_lr;
  const double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  const double shape =
      decay == Decay::Linear ? 1.0 - progress : 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return min_lr + (peak_lr - min_lr) * shape;
}

}  // namespace anatomy::nn
