#include "autograd/anomaly.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <map>
#include <unordered_set>

#include "autograd/engine.hpp"

namespace anatomy {

namespace {

thread_local int active = 0;  // guards alive on this thread (they nest)
thread_local std::vector<std::map<const TensorImpl*, std::string>> names;

const std::string* name_of(const TensorImpl* impl) {
  for (auto it = names.rbegin(); it != names.rend(); ++it)
    if (auto n = it->find(impl); n != it->end()) return &n->second;
  return nullptr;
}

// The named parameter closest to these inputs, walking back through the graph (breadth-first).
std::string nearest_parameter(const std::vector<Tensor>& inputs,
                              const std::vector<std::shared_ptr<Node>>& start) {
  std::deque<Node*> queue;
  std::unordered_set<Node*> seen;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    if (const auto* n = name_of(t.impl())) return *n;
    if (t.grad_fn() && seen.insert(t.grad_fn().get()).second) queue.push_back(t.grad_fn().get());
  }
  for (const auto& n : start)
    if (n && seen.insert(n.get()).second) queue.push_back(n.get());
  while (!queue.empty()) {  // `seen` visits each node once: the graph is finite
    Node* node = queue.front();
    queue.pop_front();
    for (const auto& e : node->edges) {
      if (e.leaf)
        if (const auto* n = name_of(e.leaf.get())) return *n;
      if (e.node && seen.insert(e.node.get()).second) queue.push_back(e.node.get());
    }
  }
  return "";
}

}  // namespace

DetectAnomaly::DetectAnomaly(std::vector<std::pair<std::string, Tensor>> named_parameters) {
  std::map<const TensorImpl*, std::string> m;
  for (const auto& [name, t] : named_parameters)
    if (t.defined()) m.emplace(t.impl(), name);
  names.push_back(std::move(m));
  ++active;
}

DetectAnomaly::~DetectAnomaly() {
  --active;
  names.pop_back();
}

bool is_anomaly_enabled() { return active > 0; }

void detail::check_anomaly(const Tensor& t, const std::string& what,
                           const std::vector<Tensor>& inputs,
                           const std::vector<std::shared_ptr<Node>>& nodes,
                           bool allow_negative_inf) {
  if (!t.defined() || t.dtype() != kFloat32) return;
  const Tensor c = t.contiguous();
  const float* p = c.data();
  for (int64_t i = 0, n = c.numel(); i < n; ++i)
    if (!std::isfinite(p[i]) && !(allow_negative_inf && std::isinf(p[i]) && p[i] < 0)) {
      const std::string param = nearest_parameter(inputs, nodes);
      throw Error(fmt::format(
          "detect_anomaly: {} holds {} (element {} of {}){}", what,
          std::isnan(p[i]) ? "NaN" : (p[i] > 0 ? "Inf" : "-Inf"), i, c.shape().str(),
          param.empty() ? "" : fmt::format("; the nearest parameter feeding it is {}", param)));
    }
}

}  // namespace anatomy
