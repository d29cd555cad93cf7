// What every exercise's checker shares: the PyTorch reference values (golden.safetensors, written
// by make_golden.py), comparisons that say where and by how much, and a verdict per check. A
// checker never only says "wrong": it tries the usual mistakes and names the one it recognizes.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <string>

#include "models/config.hpp"
#include "nn/nn.hpp"

namespace exercise {

using anatomy::Tensor;

// The largest |a - b|, or infinity when the shapes differ or a holds inf or NaN.
inline float max_diff(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape()) return INFINITY;
  float worst = 0;
  const auto av = a.to_vector(), bv = b.to_vector();
  for (size_t i = 0; i < av.size(); ++i) {
    if (!std::isfinite(av[i])) return INFINITY;
    worst = std::max(worst, std::abs(av[i] - bv[i]));
  }
  return worst;
}
inline bool close(const Tensor& a, const Tensor& b, float atol = 1e-4f) {
  return max_diff(a, b) <= atol;
}
// "shape [2, 5] and values within 1e-4", or where they are not.
inline std::string compare(const Tensor& got, const Tensor& want) {
  if (!got.defined()) return "yours is undefined";
  if (got.shape() != want.shape())
    return fmt::format("yours has shape {}, PyTorch's {}", got.shape().str(), want.shape().str());
  return fmt::format("largest difference from PyTorch {:.2e}", max_diff(got, want));
}

// make_golden.py's layers: bt.make_config()'s sizes, the book's per-head attention.
inline anatomy::models::TransformerConfig golden_layer_config() {
  auto config = anatomy::models::TransformerConfig::preset("tiny");
  config.hidden_size = 32, config.num_attention_heads = 4, config.intermediate_size = 64;
  config.layer_norm_eps = 1e-12, config.attention_type = "book";
  return config;
}

class Checker {
 public:
  explicit Checker(std::string name) : name_(std::move(name)) {
    fmt::print("Checking exercise {}\n", name_);
    golden_ = anatomy::load_safetensors(std::string(EXERCISES_DIR) + "/golden.safetensors").tensors;
  }

  // The reference value `key` of this exercise ("<exercise>.<key>" in the golden file).
  Tensor golden(const std::string& key) const {
    const std::string full = name_ + "." + key;
    auto it = golden_.find(full);
    if (it == golden_.end())
      throw anatomy::Error(fmt::format("golden.safetensors has no '{}': run make golden", full));
    return it->second.clone();
  }

  // Loads the book-style PyTorch module's weights ("param.<name>", make_golden.py) by name and
  // puts the module in eval mode.
  void load_golden_weights(anatomy::nn::Module& module) const {
    anatomy::nn::StateDict weights;
    for (const auto& [name, t] : module.state_dict()) weights[name] = golden("param." + name);
    module.load_state_dict(weights);
    module.eval();
  }

  // Whether every parameter's gradient equals PyTorch's ("pgrad.<name>"); one check.
  bool check_parameter_grads(const anatomy::nn::Module& module) {
    bool all = true;
    for (const auto& [name, p] : module.named_parameters())
      all = all && close(p.grad(), golden("pgrad." + name));
    return check(all, "every weight's gradient equals PyTorch's");
  }

  // One check: `ok`, or what went wrong and, when recognized, why.
  bool check(bool ok, const std::string& what, const std::string& why = "") {
    fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
    if (!ok && !why.empty()) fmt::print("         {}\n", why);
    failures_ += !ok;
    return ok;
  }

  // What a failed check means, when the checker recognizes the mistake.
  void diagnose(const std::string& why) { fmt::print("  -> {}\n", why); }

  // Runs the student's code; "not implemented yet" and other errors end the check with a
  // message instead of a crash.
  template <typename F>
  bool run(const std::string& what, F&& f) {
    try {
      f();
      return true;
    } catch (const anatomy::Error& e) {
      const std::string msg = e.what();
      if (msg.find("not implemented yet") != std::string::npos)
        check(false, what, "not implemented yet: fill in the TODO in your file");
      else
        check(false, what, "your code threw: " + msg);
      return false;
    }
  }

  int finish() {
    if (failures_ == 0)
      fmt::print("All checks passed: exercise {} is done.\n", name_);
    else
      fmt::print("{} check(s) failed.\n", failures_);
    return failures_ == 0 ? 0 : 1;
  }

 private:
  std::string name_;
  std::map<std::string, Tensor> golden_;
  int failures_ = 0;
};

}  // namespace exercise
