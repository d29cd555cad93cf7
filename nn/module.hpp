// Module: the base of every layer, shaped like torch.nn.Module.
//
// A module registers its parameters, buffers and submodules by name, which builds a tree:
// named_parameters() yields PyTorch's dotted names (encoder.layers.0.attention.q.weight), so a
// state dict exported from the book's PyTorch classes loads into ours by name, and back.
//
//   struct TwoLayer : nn::Module {
//     std::shared_ptr<nn::Linear> fc1, fc2;
//     TwoLayer() {
//       fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
//       fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 2));
//     }
//     Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x))); }
//   };
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.hpp"

namespace anatomy::nn {

using StateDict = std::map<std::string, Tensor>;

// What load_state_dict did not use or did not find (non-strict mode).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-input forward used by Sequential; modules with other signatures (attention takes
  // query, key, value and a mask) add their own overloads.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // --- the tree ---
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor tensor);
  // Replaces a registered parameter with another tensor of the same shape: how weights are
  // tied (an output projection sharing the embedding table). Members holding the old handle
  // must be updated by the caller (Linear::tie_weight does both).
  void set_parameter(const std::string& name, const Tensor& tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // Each parameter once, even when tied under several names (the first name wins), as torch's.
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  int64_t num_parameters() const;
  // A number that changes whenever any module registers or replaces a parameter or registers a
  // child: a list of parameters taken while it held one value is still the tree's
  // (nn::DataParallel keeps its lists while it holds).
  static uint64_t structure_version();
  // Calls fn on every submodule, children before their parent, then on this module: torch's
  // nn.Module.apply, e.g. model.apply(init) where init dispatches on the module's type.
  void apply(const std::function<void(Module&)>& fn);

  // --- modes ---
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

  // --- state ---
  // Parameters and buffers by dotted name (detached handles sharing storage).
  StateDict state_dict() const;
  // Checks everything first (missing and unexpected keys, shapes, dtypes) and throws one Error
  // listing every problem without changing anything; then copies the values in. Non-strict
  // mode tolerates missing and unexpected keys and reports them; shapes must still match.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);
  // The checks of load_state_dict alone: throws the same Error, changes nothing.
  LoadResult check_state_dict(const StateDict& state, bool strict = true) const;
  void save(const std::string& path) const;  // safetensors, atomically
  LoadResult load(const std::string& path, bool strict = true);

  // --- printing, as PyTorch's repr ---
  // The class name shown in the tree; defaults to the C++ class name.
  virtual std::string type_name() const;
  // The part inside the parentheses, e.g. "in_features=768, out_features=3072, bias=True".
  virtual std::string extra_repr() const { return ""; }
  virtual std::string repr() const;

 protected:
  bool training_ = true;

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  // Every (name, parameter) of the tree, tied ones under each of their names.
  std::vector<std::pair<std::string, Tensor>> all_named_parameters(bool recurse) const;
  void check_name(const std::string& kind, const std::string& name) const;

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace anatomy::nn

template <typename M>
requires std::is_base_of_v<anatomy::nn::Module, M>
struct fmt::formatter<M> : fmt::formatter<std::string> {
  auto format(const M& m, format_context& ctx) const {
    return fmt::formatter<std::string>::format(m.repr(), ctx);
  }
};
