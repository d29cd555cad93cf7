#include "nn/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/simd.hpp"
#include "nn/for_each_segment.hpp"

namespace anatomy::nn {

using simd::batch;

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

// f(p, g, m, v) -> updates p, m, v in place, for n elements; the last partial batch goes through
// stack buffers so every element gets the same instructions wherever a segment starts.
template <typename F>
void update4(float* p, const float* g, float* m, float* v, int64_t n, F f) {
  int64_t i = 0;
  for (; i + simd::W <= n; i += simd::W) {
    batch bp = batch::load_unaligned(p + i), bm = batch::load_unaligned(m + i);
    batch bv = batch::load_unaligned(v + i);
    f(bp, batch::load_unaligned(g + i), bm, bv);
    bp.store_unaligned(p + i);
    bm.store_unaligned(m + i);
    bv.store_unaligned(v + i);
  }
  if (i == n) return;
  alignas(64) float sp[simd::W] = {}, sg[simd::W] = {}, sm[simd::W] = {}, sv[simd::W] = {};
  const auto bytes = sizeof(float) * static_cast<size_t>(n - i);
  std::memcpy(sp, p + i, bytes);
  std::memcpy(sg, g + i, bytes);
  std::memcpy(sm, m + i, bytes);
  std::memcpy(sv, v + i, bytes);
  batch bp = batch::load_aligned(sp), bm = batch::load_aligned(sm), bv = batch::load_aligned(sv);
  f(bp, batch::load_aligned(sg), bm, bv);
  bp.store_aligned(sp);
  bm.store_aligned(sm);
  bv.store_aligned(sv);
  std::memcpy(p + i, sp, bytes);
  std::memcpy(m + i, sm, bytes);
  std::memcpy(v + i, sv, bytes);
}

}  // namespace

void Adam::step() {
  NoGradGuard no_grad;
  ++step_;
  // Scalars in double, as torch.optim computes them in Python, then rounded once to float.
  const double bc1 = 1.0 - std::pow(options.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(options.beta2, static_cast<double>(step_));
  const batch b1(static_cast<float>(options.beta1)), a1(static_cast<float>(1.0 - options.beta1));
  const batch b2(static_cast<float>(options.beta2)), a2(static_cast<float>(1.0 - options.beta2));
  const batch step_size(static_cast<float>(lr_ / bc1));
  const batch bc2_sqrt(static_cast<float>(std::sqrt(bc2)));
  const batch eps(static_cast<float>(options.eps));
  // Every parameter with a gradient, updated in one loop (torch's foreach / multi-tensor form).
  struct Item {
    float *p, *m, *v;
    Tensor g;  // contiguous, kept alive for the loop
    float wd, decay;
  };
  std::vector<Item> items;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    Tensor g = p.grad().contiguous();
    const auto wd = static_cast<float>(weight_decay_[i]);
    items.push_back({p.data(), buffer(i, "exp_avg").data(), buffer(i, "exp_avg_sq").data(), g, wd,
                     static_cast<float>(1.0 - lr_ * weight_decay_[i])});
    sizes.push_back(p.numel());
  }
  const bool decoupled = decoupled_;
  for_each_segment(sizes, [&](size_t k, int64_t b, int64_t e) {
    const Item& it = items[k];
    const batch wd(it.wd), decay(it.decay);
    const bool decays = it.wd != 0;
    update4(it.p + b, it.g.data() + b, it.m + b, it.v + b, e - b,
            [&](batch& p, batch g, batch& m, batch& v) {
              if (decays && decoupled) p = p * decay;    // AdamW: p = p (1 - lr·wd)
              if (decays && !decoupled) g = g + p * wd;  // Adam's L2 decay: g' = g + wd·p
              // m = β1 m + (1-β1) g'     v = β2 v + (1-β2) g'²
              // p = p - lr/(1-β1^t) · m / (√v / √(1-β2^t) + ε)
              m = m * b1 + g * a1;
              v = v * b2 + g * g * a2;
              p = p - step_size * m / (xsimd::sqrt(v) / bc2_sqrt + eps);
            });
  });
}

}  // namespace anatomy::nn
