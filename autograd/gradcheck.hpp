// gradcheck: compares the gradients backward() computes with central finite differences, like
// torch.autograd.gradcheck. Call it on your own functions when you write a backward.
//
// It checks the vector-Jacobian product for a fixed random vector r: with L(x) = Σ f(x) ⊙ r,
// dL/dx from backward() must match (L(x + εe_i) - L(x - εe_i)) / 2ε for every element i of
// every input that requires grad. Float32 limits the precision, so tolerances are loose-ish;
// keep inputs small (a few dozen elements) and away from kinks (relu at 0, abs at 0).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy {

struct GradcheckOptions {
  double eps = 1e-3;
  double atol = 1e-2;
  double rtol = 1e-2;
  uint64_t seed = 0;  // for r
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch, naming the input and the element
  double max_abs_error = 0.0;
  explicit operator bool() const { return ok; }
};

using TensorFunction = std::function<Tensor(const std::vector<Tensor>&)>;

GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace anatomy
