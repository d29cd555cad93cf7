// Optimizers with torch.optim's update rules: SGD (momentum, dampening, nesterov,
// weight_decay), Adam (L2 weight decay) and AdamW (decoupled weight decay).
//
//   nn::AdamW opt(model->parameters(), {.lr = 1e-3, .weight_decay = 0.01});
//   loss.backward();
//   opt.step();
//   opt.zero_grad();
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/module.hpp"

namespace anatomy::nn {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr, const char* name);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t steps_taken() const { return step_; }
  const std::vector<Tensor>& params() const { return params_; }
  // Weight decay for some parameters only, as torch's parameter groups allow: the usual rule
  // (GPT-2, nanoGPT, BERT) decays matrices and embeddings but not biases and LayerNorm gains.
  void set_weight_decay(const std::vector<Tensor>& params, double weight_decay);
  // Every parameter with fewer than 2 dims gets no weight decay.
  void no_decay_for_vectors();

  // Per-parameter buffers as "state.<index>.<buffer>" plus "step": what a checkpoint needs to
  // resume exactly. load_state_dict checks every key and shape before changing anything.
  StateDict state_dict() const;
  void check_state_dict(const StateDict& state) const;
  void load_state_dict(const StateDict& state);

 protected:
  // The named buffer of parameter i, created as zeros on first use.
  Tensor& buffer(size_t i, const std::string& name);
  // Buffer names each parameter has once stepped (so loading knows what to expect).
  virtual std::vector<std::string> buffer_names() const = 0;

  std::vector<Tensor> params_;
  double lr_;
  int64_t step_ = 0;
  std::vector<std::map<std::string, Tensor>> state_;
  std::vector<double> weight_decay_;  // per parameter; starts at the options' value
  const char* name_;
};

struct SGDOptions {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  SGDOptions options;

 protected:
  std::vector<std::string> buffer_names() const override;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  void step() override;
  AdamOptions options;

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, const char* name);
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  bool decoupled_;  // AdamW: decay the weights directly instead of adding wd·p to the gradient
};

// AdamW's default weight_decay is 0.01, as torch's.
struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options);
};

}  // namespace anatomy::nn
