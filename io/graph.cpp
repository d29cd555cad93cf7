#include "io/graph.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <unordered_map>

#include "autograd/engine.hpp"

namespace anatomy {

std::string to_dot(const Tensor& root) {
  std::string out = "digraph anatomy {\n  rankdir=BT;\n  node [fontname=\"Helvetica\"];\n";
  std::unordered_map<const void*, std::string> ids;
  auto id_of = [&](const void* p) {
    auto it = ids.find(p);
    if (it != ids.end()) return it->second;
    return ids[p] = fmt::format("n{}", ids.size());
  };
  auto leaf = [&](const Tensor& t) {
    const std::string id = id_of(t.impl());
    const std::string label =
        t.name().empty() ? t.shape().str() : t.name() + "\\n" + t.shape().str();
    out += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=\"{}\", label=\"{}\"];\n", id,
                       t.requires_grad() ? "lightblue" : "lightgray", label);
    return id;
  };
  if (!root.grad_fn()) {
    leaf(root);
    return out + "}\n";
  }
  std::vector<Node*> stack{root.grad_fn().get()};
  std::unordered_map<Node*, bool> seen{{root.grad_fn().get(), true}};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    const std::string nid = id_of(n);
    out += fmt::format("  {} [shape=box, style=filled, fillcolor=\"{}\", label=\"{}\\n{}\"];\n",
                       nid, n->released ? "white" : "lightyellow", n->name, n->output_shape.str());
    for (const auto& e : n->edges) {
      if (e.node) {
        Node* child = e.node.get();
        out += fmt::format("  {} -> {};\n", id_of(child), nid);
        if (!seen[child]) {
          seen[child] = true;
          stack.push_back(child);
        }
      } else if (e.leaf) {
        out += fmt::format("  {} -> {};\n", leaf(Tensor(e.leaf)), nid);
      }
    }
  }
  return out + "}\n";
}

void save_dot(const Tensor& root, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw Error(fmt::format("save_dot: cannot write {}", tmp));
    f << to_dot(root);
    if (!f.flush()) throw Error(fmt::format("save_dot: writing {} failed", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("save_dot: cannot move {} to {}", tmp, path));
  }
}

}  // namespace anatomy
