#include "autograd/random.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <utility>

#include "autograd/tensor.hpp"

namespace anatomy {

void Generator::seed_(uint64_t seed) {
  state_ = 0;
  inc_ = (seed << 1u) | 1u;
  next_u32();
  state_ += 0x853c49e6748fea9bULL ^ seed;
  next_u32();
  has_spare_ = false;
}

void Generator::advance(uint64_t delta) {
  // One step is s -> a s + c; 2^i steps are s -> A_i s + C_i with A_{i+1} = A_i², C_{i+1} =
  // (A_i + 1) C_i. The bits of delta pick which of those to compose.
  uint64_t a = kMultiplier, c = inc_, acc_a = 1, acc_c = 0;
  for (; delta > 0; delta >>= 1u) {
    if (delta & 1u) {
      acc_a *= a;
      acc_c = acc_c * a + c;
    }
    c = (a + 1) * c;
    a *= a;
  }
  state_ = acc_a * state_ + acc_c;
}

float Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box-Muller in double: u1 in (0, 1] keeps log() finite.
  const double u1 = (static_cast<double>(next_u32()) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(next_u32()) / 4294967296.0;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_ = static_cast<float>(r * std::sin(theta));
  has_spare_ = true;
  return static_cast<float>(r * std::cos(theta));
}

void Generator::set_state(const State& s) {
  state_ = s.state;
  inc_ = s.inc | 1u;
  has_spare_ = s.has_spare;
  spare_ = s.spare;
}

namespace {
Generator& process_generator() {
  static Generator generator(0);
  return generator;
}
thread_local Generator* guarded = nullptr;  // the innermost GeneratorGuard's on this thread
}  // namespace

Generator& default_generator() { return guarded ? *guarded : process_generator(); }

void manual_seed(uint64_t seed) { process_generator().seed_(seed); }

GeneratorGuard::GeneratorGuard(Generator& g) : previous_(std::exchange(guarded, &g)) {}
GeneratorGuard::~GeneratorGuard() { guarded = previous_; }

// A tensor of `shape` whose values are (g.*draw)() of the default generator g, in order.
static Tensor drawn(Shape shape, float (Generator::*draw)()) {
  Tensor t = empty(std::move(shape));
  float* p = t.data();
  auto& g = default_generator();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (g.*draw)();
  return t;
}

Tensor randn(Shape shape) { return drawn(std::move(shape), &Generator::normal); }
Tensor rand(Shape shape) { return drawn(std::move(shape), &Generator::uniform); }

Tensor randint(int64_t low, int64_t high, Shape shape) {
  if (high <= low)
    throw Error(fmt::format("randint: expects low < high, but got low={}, high={}", low, high));
  Tensor t = empty(std::move(shape), Dtype::Int64);
  int64_t* p = t.data_ptr<int64_t>();
  auto& g = default_generator();
  const auto range = static_cast<uint64_t>(high - low);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t r = (static_cast<uint64_t>(g.next_u32()) << 32) | g.next_u32();
    p[i] = low + static_cast<int64_t>(r % range);
  }
  return t;
}

}  // namespace anatomy
