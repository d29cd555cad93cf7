#include "autograd/dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <typeindex>

#include "autograd/tensor.hpp"

namespace anatomy {

namespace {

struct Entry {
  std::type_index type;
  detail::AnyFunction fn;
};

// Kernels register while the program starts (static initializers in kernels/) and are looked up
// by every op call afterwards: a mutex guards the rare writes, and lookups after start-up only
// read.
std::map<std::string, Entry, std::less<>>& registry() {
  static std::map<std::string, Entry, std::less<>> entries;
  return entries;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

enum class Path { Unset, Reference, Fast };
std::atomic<Path> path{Path::Unset};

Path parse(std::string_view name, const char* where) {
  if (name == "reference") return Path::Reference;
  if (name == "fast") return Path::Fast;
  throw Error(fmt::format("{}: unknown kernels '{}' (ANATOMY_KERNELS takes reference or fast)",
                          where, name));
}

// The environment's choice, read once, at the first op.
Path current() {
  Path p = path.load(std::memory_order_relaxed);
  if (p != Path::Unset) return p;
  const char* env = std::getenv("ANATOMY_KERNELS");
  p = env && *env ? parse(env, "ANATOMY_KERNELS") : Path::Fast;
  path.store(p, std::memory_order_relaxed);
  return p;
}

}  // namespace

void set_kernels(std::string_view name) { path.store(parse(name, "set_kernels")); }

std::string kernels() { return current() == Path::Fast ? "fast" : "reference"; }

std::vector<std::string> registered_kernels() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry()) names.push_back(name);
  return names;
}

namespace detail {

void register_kernel(const char* op, const std::type_info& type, AnyFunction fn) {
  std::lock_guard lock(registry_mutex());
  registry().insert_or_assign(op, Entry{std::type_index(type), fn});
}

AnyFunction find_kernel(const char* op, const std::type_info& type) {
  if (current() != Path::Fast) return nullptr;
  const auto& entries = registry();
  const auto it = entries.find(std::string_view(op));
  if (it == entries.end()) return nullptr;
  if (it->second.type != std::type_index(type))
    throw Error(
        fmt::format("kernels: the fast kernel of '{}' was registered with another "
                    "signature than the op looks it up with",
                    op));
  return it->second.fn;
}

}  // namespace detail

}  // namespace anatomy
