// Containers: ModuleList (indexed, registered as "0", "1", ...) and Sequential (calls its
// modules in order), as torch.nn's.
#pragma once

#include "nn/module.hpp"

namespace anatomy::nn {

class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules) {
    for (auto& m : modules) push_back(std::move(m));
  }
  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    items_.push_back(module);
    return register_module(std::to_string(items_.size() - 1), std::move(module));
  }
  size_t size() const { return items_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const;
  // The i-th module as its own type (throws if it is not an M).
  template <typename M>
  std::shared_ptr<M> at(size_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) throw Error(fmt::format("ModuleList: element {} is a {}", i, (*this)[i]->type_name()));
    return m;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  // As PyTorch 2 prints a ModuleList: a run of children that print alike is one entry,
  // "(0-11): 12 x AttentionHead(...)".
  std::string repr() const override;

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

class Sequential : public ModuleList {
 public:
  using ModuleList::ModuleList;
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& m : *this) h = m->forward(h);
    return h;
  }
};

}  // namespace anatomy::nn
