// The graph behind a tensor as Graphviz DOT: one box per recorded op (its backward's name and
// output shape), one ellipse per leaf (its name, if set with set_name, and shape). Render with
// `dot -Tsvg graph.dot -o graph.svg`.
#pragma once

#include <string>

#include "autograd/tensor.hpp"

namespace anatomy {

std::string to_dot(const Tensor& root);
// Writes to_dot(root) to `path` (via a temporary file, so a failure leaves no half-written file).
void save_dot(const Tensor& root, const std::string& path);

}  // namespace anatomy
