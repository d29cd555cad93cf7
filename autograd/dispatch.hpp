// Which loops fill an op's numbers: the plain ones in this folder, or a fast kernel that
// registered itself under a name (kernels/). The op itself, its checks, its node and the rule of
// its backward are written once, here; a fast kernel (SIMD, threads, a packed GEMM) computes the
// same numbers, forward or backward, when fast kernels are chosen:
//
//   auto fast = fast_kernel<Tensor(const Tensor&)>("exp");
//   Tensor out = fast ? fast(a) : ...the plain loop...;
//   return record(out, "ExpBackward0", {a}, ...);
//
// The choice, for the whole process: ANATOMY_KERNELS=reference|fast in the environment,
// set_kernels("reference") in C++, or `--kernels reference` on the command line. The default is
// "fast"; with no kernel registered (a program that does not link kernels/), the plain loops run.
#pragma once

#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace anatomy {

// "reference" or "fast"; anything else is refused with an Error naming the values.
void set_kernels(std::string_view name);
// The path in force: "reference" or "fast".
std::string kernels();

// The names of the ops that have a fast kernel registered, sorted.
std::vector<std::string> registered_kernels();

namespace detail {
using AnyFunction = void (*)();
void register_kernel(const char* op, const std::type_info& type, AnyFunction fn);
AnyFunction find_kernel(const char* op, const std::type_info& type);
}  // namespace detail

// Registers `fn` as the fast implementation of `op`. Fn is the op's function type, e.g.
// Tensor(const Tensor&, int64_t); a second registration of the same op replaces the first.
template <typename Fn>
void register_kernel(const char* op, Fn* fn) {
  detail::register_kernel(op, typeid(Fn), reinterpret_cast<detail::AnyFunction>(fn));
}

// The fast kernel of `op` when fast kernels are chosen and one is registered, else nullptr. A
// kernel registered with another function type is an Error (a programming mistake).
template <typename Fn>
Fn* fast_kernel(const char* op) {
  return reinterpret_cast<Fn*>(detail::find_kernel(op, typeid(Fn)));
}

}  // namespace anatomy
