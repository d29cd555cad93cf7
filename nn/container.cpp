#include "nn/container.hpp"

#include "io/print.hpp"

namespace anatomy::nn {

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  if (i >= items_.size())
    throw Error(fmt::format("ModuleList: index {} is out of range (size {})", i, items_.size()));
  return items_[i];
}

std::string ModuleList::repr() const {
  if (items_.empty()) return type_name() + "()";
  // Runs of consecutive children whose printed trees are equal: [first, last] and the tree.
  struct Run {
    size_t first, last;
    std::string tree;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < items_.size(); ++i) {
    std::string tree = items_[i]->repr();
    if (!runs.empty() && runs.back().tree == tree && print_options().collapse_repeated_modules)
      runs.back().last = i;
    else
      runs.push_back({i, i, std::move(tree)});
  }
  std::string out = type_name() + "(";
  for (const auto& [first, last, tree] : runs) {
    std::string entry = first == last
                            ? fmt::format("({}): {}", first, tree)
                            : fmt::format("({}-{}): {} x {}", first, last, last - first + 1, tree);
    std::string indented;
    for (char ch : entry) {
      indented += ch;
      if (ch == '\n') indented += "  ";
    }
    out += "\n  " + indented;
  }
  return out + "\n)";
}

}  // namespace anatomy::nn
