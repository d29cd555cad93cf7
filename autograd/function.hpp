// Defining a new differentiable op outside the library, like torch.autograd.Function: one
// struct with a static forward and a static backward, side by side.
//
//   struct Cube : anatomy::Function<Cube> {
//     static constexpr const char* name = "CubeBackward";
//     static Tensor forward(Context& ctx, const Tensor& x) {
//       ctx.save_for_backward({x});
//       return x * x * x;
//     }
//     static std::vector<Tensor> backward(Context& ctx, const Tensor& grad) {
//       const Tensor& x = ctx.saved()[0];
//       return {grad * 3.0f * x * x};  // d(x³)/dx = 3x²
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs without recording history (it is one node in the graph); backward returns one
// gradient per Tensor argument of forward, in order (an undefined Tensor for "none").
#pragma once

#include <any>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/engine.hpp"

namespace anatomy {

class Context {
 public:
  // Saved tensors are detached: backward needs their values, not their history, and a saved
  // output must not keep its own node alive (a reference cycle).
  void save_for_backward(const std::vector<Tensor>& tensors) {
    for (const auto& t : tensors) saved_.push_back(t.defined() ? t.detach() : t);
  }
  const std::vector<Tensor>& saved() const { return saved_; }
  std::map<std::string, std::any> data;  // anything else backward needs (sizes, flags)

 private:
  std::vector<Tensor> saved_;
};

template <typename Derived>
struct Function {
  template <typename... Args>
  static Tensor apply(Args&&... args) {
    auto ctx = std::make_shared<Context>();
    Tensor out;
    {
      NoGradGuard no_grad;
      out = Derived::forward(*ctx, args...);
    }
    std::vector<Tensor> inputs;
    (collect(inputs, args), ...);
    std::string name = "CustomFunctionBackward";
    if constexpr (requires { Derived::name; }) name = Derived::name;
    return record(out, name, inputs,
                  [ctx](const Tensor& grad) { return Derived::backward(*ctx, grad); });
  }

 private:
  template <typename T>
  static void collect(std::vector<Tensor>& inputs, const T& arg) {
    if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) inputs.push_back(arg);
  }
};

}  // namespace anatomy
