#include "nn/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/dispatch.hpp"

namespace anatomy::nn {

Optimizer::Optimizer(std::vector<Tensor> params, double lr, const char* name)
    : params_(std::move(params)), lr_(lr), state_(params_.size()), name_(name) {
  if (lr < 0) throw Error(fmt::format("{}: Invalid learning rate: {}", name, lr));
  if (params_.empty()) throw Error(fmt::format("{}: got an empty parameter list", name));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined() || !params_[i].requires_grad())
      throw Error(fmt::format("{}: parameter {} does not require grad", name, i));
    if (!params_[i].is_leaf())
      throw Error(fmt::format("{}: can't optimize a non-leaf Tensor (parameter {})", name, i));
    if (!params_[i].is_contiguous())
      throw Error(fmt::format("{}: parameter {} is not contiguous", name, i));
  }
}

void Optimizer::set_weight_decay(const std::vector<Tensor>& params, double wd) {
  if (wd < 0) throw Error(fmt::format("{}: Invalid weight_decay value: {}", name_, wd));
  for (const auto& p : params) {
    bool found = false;
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].is_same(p)) weight_decay_[i] = wd, found = true;
    if (!found)
      throw Error(
          fmt::format("{}: set_weight_decay: a tensor that is not one of the parameters", name_));
  }
}

void Optimizer::no_decay_for_vectors() {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].dim() < 2) weight_decay_[i] = 0.0;
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.zero_grad();
}

Tensor& Optimizer::buffer(size_t i, const std::string& name) {
  auto it = state_[i].find(name);
  if (it == state_[i].end()) it = state_[i].emplace(name, zeros(params_[i].shape())).first;
  return it->second;
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  out["step"] = full({}, static_cast<float>(step_), kInt64);
  for (size_t i = 0; i < state_.size(); ++i)
    for (const auto& [name, t] : state_[i]) out[fmt::format("state.{}.{}", i, name)] = t;
  return out;
}

void Optimizer::check_state_dict(const StateDict& state) const {
  std::vector<std::string> problems;
  if (!state.count("step") || state.at("step").dtype() != kInt64)
    problems.push_back("'step' is missing or not int64");
  for (const auto& [key, t] : state) {
    if (key == "step") continue;
    size_t i = 0;
    char name[64] = {};
    if (std::sscanf(key.c_str(), "state.%zu.%63s", &i, name) != 2 || i >= params_.size()) {
      problems.push_back(fmt::format("unexpected key '{}'", key));
      continue;
    }
    const auto names = buffer_names();
    if (std::find(names.begin(), names.end(), std::string(name)) == names.end())
      problems.push_back(fmt::format("'{}': {} has no buffer '{}'", key, name_, name));
    else if (t.shape() != params_[i].shape())
      problems.push_back(fmt::format("'{}': shape {} but parameter {} has shape {}", key,
                                     t.shape().str(), i, params_[i].shape().str()));
  }
  if (!problems.empty()) {
    std::string msg = fmt::format("{}: load_state_dict (nothing was loaded):", name_);
    for (const auto& p : problems) msg += "\n\t" + p;
    throw Error(msg);
  }
}

void Optimizer::load_state_dict(const StateDict& state) {
  check_state_dict(state);
  step_ = state.at("step").item<int64_t>();
  for (auto& s : state_) s.clear();
  for (const auto& [key, t] : state) {
    size_t i = 0;
    char name[64] = {};
    if (key == "step" || std::sscanf(key.c_str(), "state.%zu.%63s", &i, name) != 2) continue;
    state_[i][name] = t.clone().detach();
  }
}

// --- SGD ---

SGD::SGD(std::vector<Tensor> params, SGDOptions o)
    : Optimizer(std::move(params), o.lr, "SGD"), options(o) {
  weight_decay_.assign(params_.size(), o.weight_decay);
  if (o.momentum < 0) throw Error(fmt::format("SGD: Invalid momentum value: {}", o.momentum));
  if (o.weight_decay < 0)
    throw Error(fmt::format("SGD: Invalid weight_decay value: {}", o.weight_decay));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw Error("SGD: Nesterov momentum requires a momentum and zero dampening");
}

std::vector<std::string> SGD::buffer_names() const { return {"momentum_buffer"}; }

void SGD::step() {
  NoGradGuard no_grad;
  ++step_;
  const auto mom = static_cast<float>(options.momentum);
  const auto damp = static_cast<float>(1.0 - options.dampening);
  const auto lr = static_cast<float>(lr_);
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const auto wd = static_cast<float>(weight_decay_[i]);
    Tensor d = g.contiguous().clone().detach();  // d = g + wd·p
    if (wd != 0) d.add_(p, wd);
    if (mom != 0) {
      const bool first = !state_[i].count("momentum_buffer");
      Tensor& buf = buffer(i, "momentum_buffer");
      if (first) {
        buf.copy_(d);  // torch starts the buffer at the first d, undamped
      } else {
        buf.mul_(mom);  // buf = μ·buf + (1 - dampening)·d
        buf.add_(d, damp);
      }
      if (options.nesterov)
        d.add_(buf, mom);  // d = d + μ·buf
      else
        d = buf;
    }
    p.add_(d, -lr);
  }
}

// --- Adam / AdamW ---

Adam::Adam(std::vector<Tensor> params, AdamOptions o) : Adam(std::move(params), o, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled, const char* name)
    : Optimizer(std::move(params), o.lr, name), options(o), decoupled_(decoupled) {
  weight_decay_.assign(params_.size(), o.weight_decay);
  if (o.eps < 0) throw Error(fmt::format("{}: Invalid epsilon value: {}", name, o.eps));
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
    throw Error(fmt::format("{}: Invalid beta parameters: ({}, {})", name, o.beta1, o.beta2));
  if (o.weight_decay < 0)
    throw Error(fmt::format("{}: Invalid weight_decay value: {}", name, o.weight_decay));
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam(std::move(params), {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay}, true, "AdamW") {}

namespace {

// The loops of one Adam or AdamW step, over every parameter that has a gradient, as torch's
// _fused_adam_ / _fused_adamw_ take them: parameter i, its gradient (contiguous), its two moment
// buffers and its weight decay. The scalars are computed in double, as torch.optim computes them
// in Python, then rounded once to float. The fast kernel "adam" (kernels/optimizer.cpp) runs the
// same float operations on SIMD vectors, all the parameters in one parallel loop.
void adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
          const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
          const std::vector<double>& weight_decays, int64_t step, double lr, double beta1,
          double beta2, double eps, bool decoupled) {
  const auto b1 = static_cast<float>(beta1), a1 = static_cast<float>(1.0 - beta1);
  const auto b2 = static_cast<float>(beta2), a2 = static_cast<float>(1.0 - beta2);
  // The bias corrections: m and v start at zero, so their early averages are too small by these.
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const auto step_size = static_cast<float>(lr / bc1);
  const auto bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const auto e = static_cast<float>(eps);
  for (size_t i = 0; i < params.size(); ++i) {
    float *p = params[i].data(), *m = exp_avgs[i].data(), *v = exp_avg_sqs[i].data();
    const float* g = grads[i].data();
    const auto wd = static_cast<float>(weight_decays[i]);
    const auto decay = static_cast<float>(1.0 - lr * weight_decays[i]);
    for (int64_t j = 0; j < params[i].numel(); ++j) {
      float gj = g[j];
      if (wd != 0 && decoupled) p[j] = p[j] * decay;   // AdamW: p = p (1 - lr·wd)
      if (wd != 0 && !decoupled) gj = gj + p[j] * wd;  // Adam's L2 decay: g' = g + wd·p
      // m = β1 m + (1-β1) g'     v = β2 v + (1-β2) g'²
      // p = p - lr/(1-β1^t) · m / (√v / √(1-β2^t) + ε)
      m[j] = m[j] * b1 + gj * a1;
      v[j] = v[j] * b2 + gj * gj * a2;
      p[j] = p[j] - step_size * m[j] / (std::sqrt(v[j]) / bc2_sqrt + e);
    }
  }
}

}  // namespace

void Adam::step() {
  NoGradGuard no_grad;
  ++step_;
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs;
  std::vector<double> weight_decays;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    params.push_back(params_[i]);
    grads.push_back(params_[i].grad().contiguous());
    exp_avgs.push_back(buffer(i, "exp_avg"));
    exp_avg_sqs.push_back(buffer(i, "exp_avg_sq"));
    weight_decays.push_back(weight_decay_[i]);
  }
  const auto& o = options;
  auto loops = adam;
  if (auto fast = fast_kernel<decltype(adam)>("adam")) loops = fast;
  loops(params, grads, exp_avgs, exp_avg_sqs, weight_decays, step_, lr_, o.beta1, o.beta2, o.eps,
        decoupled_);
}

}  // namespace anatomy::nn
