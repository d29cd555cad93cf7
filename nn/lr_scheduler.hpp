// Learning-rate schedules. Each is a pure function of the step count (and, for one that decays
// to the end of the run, of the run's length), so resuming a run needs only the step. Like torch's
// LambdaLR: constructing one sets the optimizer's lr to lr(0), and each step() (after
// optimizer.step()) advances the count and sets lr(count).
#pragma once

#include <algorithm>

#include "nn/optimizer.hpp"

namespace anatomy::nn {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  virtual double lr_at(int64_t step) const = 0;
  // The run's expected length in steps, when it is known only as it goes (a run bounded by a
  // time budget re-estimates it from its pace). A schedule that decays to the end of the run
  // aims at it from the next step on; the others ignore it.
  virtual void plan(int64_t /*total_steps*/) {}
  void step() { optimizer_.set_lr(lr_at(++step_)); }
  int64_t last_step() const { return step_; }
  void set_last_step(int64_t step) {
    step_ = step;
    optimizer_.set_lr(lr_at(step_));
  }

 protected:
  void start() { optimizer_.set_lr(lr_at(0)); }  // called by each schedule's constructor

 private:
  Optimizer& optimizer_;
  int64_t step_ = 0;
};

// "Attention Is All You Need": factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
// with step 0 counted as 1 (as the Annotated Transformer does).
class NoamSchedule : public LRScheduler {
 public:
  NoamSchedule(Optimizer& opt, int64_t d_model, int64_t warmup_steps, double factor = 1.0);
  double lr_at(int64_t step) const override;
  int64_t d_model, warmup_steps;
  double factor;
};

// Linear warmup from 0 to peak_lr over warmup_steps, then linear or cosine decay to min_lr at
// total_steps (Hugging Face's get_linear/cosine_schedule_with_warmup when min_lr = 0).
class WarmupDecaySchedule : public LRScheduler {
 public:
  enum class Decay { Linear, Cosine };
  WarmupDecaySchedule(Optimizer& opt, double peak_lr, int64_t warmup_steps, int64_t total_steps,
                      Decay decay = Decay::Linear, double min_lr = 0.0);
  double lr_at(int64_t step) const override;
  void plan(int64_t total) override { total_steps = std::max(total, warmup_steps); }
  double peak_lr;
  int64_t warmup_steps, total_steps;
  Decay decay;
  double min_lr;
};

class ConstantSchedule : public LRScheduler {
 public:
  ConstantSchedule(Optimizer& opt, double lr) : LRScheduler(opt), lr(lr) { start(); }
  double lr_at(int64_t) const override { return lr; }
  double lr;
};

}  // namespace anatomy::nn
