#include "nn/module.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <typeinfo>
#include "io/safetensors.hpp"

namespace anatomy::nn {

Tensor Module::forward(const Tensor&) {
  throw Error(
      fmt::format("{}: this module has no single-input forward(); call its own forward "
                  "overload",
                  type_name()));
}

void Module::check_name(const std::string& kind, const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(fmt::format("{}: {} name '{}' must be non-empty and contain no '.'", type_name(),
                            kind, name));
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(parameters_) || taken(buffers_) || taken(children_))
    throw Error(fmt::format("{}: attribute '{}' already exists", type_name(), name));
}

namespace {
std::atomic<uint64_t> structure_changes{0};
}  // namespace

uint64_t Module::structure_version() { return structure_changes.load(std::memory_order_acquire); }

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name("parameter", name);
  structure_changes.fetch_add(1, std::memory_order_acq_rel);
  if (tensor.defined()) tensor.requires_grad_(requires_grad);
  parameters_.push_back({name, tensor});
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  check_name("buffer", name);
  buffers_.push_back({name, tensor});
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name("module", name);
  if (!module) throw Error(fmt::format("{}: module '{}' is null", type_name(), name));
  structure_changes.fetch_add(1, std::memory_order_acq_rel);
  children_.push_back({name, std::move(module)});
}

void Module::set_parameter(const std::string& name, const Tensor& tensor) {
  for (auto& [n, p] : parameters_) {
    if (n != name) continue;
    if (p.defined() && tensor.shape() != p.shape())
      throw Error(fmt::format("{}: set_parameter('{}'): shape {} differs from {}", type_name(),
                              name, tensor.shape().str(), p.shape().str()));
    p = tensor;
    structure_changes.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  throw Error(fmt::format("{}: set_parameter: no parameter named '{}'", type_name(), name));
}

std::vector<std::pair<std::string, Tensor>> Module::all_named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [n, p] : parameters_)
    if (p.defined()) out.push_back({n, p});
  if (recurse)
    for (const auto& [cn, c] : children_)
      for (auto& [n, p] : c->all_named_parameters(true)) out.push_back({cn + "." + n, p});
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::vector<const TensorImpl*> seen;
  for (auto& [n, p] : all_named_parameters(recurse)) {
    if (std::find(seen.begin(), seen.end(), p.impl()) != seen.end()) continue;
    seen.push_back(p.impl());
    out.push_back({n, p});
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [n, b] : buffers_)
    if (b.defined()) out.push_back({n, b});
  if (recurse)
    for (const auto& [cn, c] : children_)
      for (auto& [n, b] : c->named_buffers(true)) out.push_back({cn + "." + n, b});
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  // named_parameters' walk without its names: building each dotted name at every level costs more
  // than the walk, and the Trainer asks at every step that clips.
  std::vector<Tensor> out;
  std::vector<const TensorImpl*> seen;
  std::function<void(const Module&)> walk = [&](const Module& m) {
    for (const auto& [_, p] : m.parameters_)
      if (p.defined() && std::find(seen.begin(), seen.end(), p.impl()) == seen.end()) {
        seen.push_back(p.impl());
        out.push_back(p);
      }
    if (recurse)
      for (const auto& [_, c] : m.children_) walk(*c);
  };
  walk(*this);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [_, c] : children_) out.push_back(c);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [_, c] : children_) c->apply(fn);
  fn(*this);
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [_, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (const auto& p : parameters()) p.zero_grad();
}

StateDict Module::state_dict() const {
  StateDict out;
  for (const auto& [n, p] : all_named_parameters(true)) out[n] = p.detach();
  for (const auto& [n, b] : named_buffers()) out[n] = b.detach();
  return out;
}

LoadResult Module::check_state_dict(const StateDict& state, bool strict) const {
  const StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> problems;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) {
      result.missing_keys.push_back(name);
      continue;
    }
    const Tensor& src = it->second;
    if (!src.defined())
      problems.push_back(fmt::format("'{}': the given tensor is undefined", name));
    else if (src.shape() != t.shape())
      problems.push_back(
          fmt::format("size mismatch for {}: copying a param with shape {} from "
                      "checkpoint, the shape in current model is {}",
                      name, to_string(src.shape()), to_string(t.shape())));
    else if (src.dtype() != t.dtype())
      problems.push_back(fmt::format("dtype mismatch for {}: checkpoint has {}, the model has {}",
                                     name, dtype_name(src.dtype()), dtype_name(t.dtype())));
  }
  for (const auto& [name, _] : state)
    if (!own.count(name)) result.unexpected_keys.push_back(name);
  if (strict) {
    if (!result.missing_keys.empty())
      problems.push_back(fmt::format("Missing key(s) in state_dict: \"{}\"",
                                     fmt::join(result.missing_keys, "\", \"")));
    if (!result.unexpected_keys.empty())
      problems.push_back(fmt::format("Unexpected key(s) in state_dict: \"{}\"",
                                     fmt::join(result.unexpected_keys, "\", \"")));
  }
  if (!problems.empty()) {
    std::string msg =
        fmt::format("Error(s) in loading state_dict for {} (nothing was loaded):", type_name());
    for (const auto& p : problems) msg += "\n\t" + p;
    throw Error(msg);
  }
  return result;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  LoadResult result = check_state_dict(state, strict);
  NoGradGuard no_grad;
  for (auto& [name, t] : state_dict()) {
    auto it = state.find(name);
    if (it != state.end()) t.copy_(it->second);  // t shares storage with the parameter
  }
  return result;
}

void Module::save(const std::string& path) const { save_safetensors(path, state_dict()); }

LoadResult Module::load(const std::string& path, bool strict) {
  return load_state_dict(load_safetensors(path).tensors, strict);
}

std::string Module::type_name() const {
  int status = 0;
  const char* mangled = typeid(*this).name();
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  const auto colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

// PyTorch's Module.__repr__: extra_repr inline when there are no children, otherwise one line
// per child, indented.
std::string Module::repr() const {
  std::vector<std::string> lines;
  const std::string extra = extra_repr();
  std::vector<std::string> extra_lines;
  if (!extra.empty()) extra_lines.push_back(extra);
  for (const auto& [name, child] : children_) {
    std::string s = child->repr();
    std::string indented;
    for (char ch : s) {
      indented += ch;
      if (ch == '\n') indented += "  ";
    }
    lines.push_back("(" + name + "): " + indented);
  }
  std::string out = type_name() + "(";
  if (extra_lines.size() == 1 && lines.empty()) {
    out += extra_lines[0];
  } else if (!extra_lines.empty() || !lines.empty()) {
    std::vector<std::string> all = extra_lines;
    all.insert(all.end(), lines.begin(), lines.end());
    out += "\n  " + fmt::format("{}", fmt::join(all, "\n  ")) + "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace anatomy::nn
