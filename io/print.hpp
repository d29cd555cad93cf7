// Printing tensors the way PyTorch does (torch/_tensor_str.py): 4 decimals, a common width per
// tensor, scientific notation when values span more than 1000x, "..." summaries past 1000
// elements, 80-column lines, and the grad_fn / requires_grad suffix:
//   tensor([[ 2051, 10029,  2066,  2019,  8612]])
//   tensor([0.2119, 0.5761, 0.2119], grad_fn=<SoftmaxBackward0>)
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>

#include "autograd/tensor.hpp"

namespace anatomy {

struct PrintOptions {
  int precision = 4;
  int64_t threshold = 1000;  // summarize above this many elements
  int64_t edgeitems = 3;
  int64_t linewidth = 80;
  // A module list prints identical neighbours once, "(0-11): 12 x AttentionHead(...)", as
  // PyTorch 2 does; false prints each.
  bool collapse_repeated_modules = true;
};
PrintOptions& print_options();

std::string to_string(const Tensor& t);
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace anatomy

template <>
struct fmt::formatter<anatomy::Tensor> : fmt::formatter<std::string> {
  auto format(const anatomy::Tensor& t, format_context& ctx) const {
    return fmt::formatter<std::string>::format(anatomy::to_string(t), ctx);
  }
};
template <>
struct fmt::formatter<anatomy::Shape> : fmt::formatter<std::string> {
  auto format(const anatomy::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(anatomy::to_string(s), ctx);
  }
};
