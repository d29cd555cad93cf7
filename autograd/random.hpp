// The global random generator behind randn, rand, randint, dropout and parameter init.
// manual_seed(s) makes every run with the same seed and thread count produce the same numbers.
// Its whole state is two integers, so a training checkpoint can save and restore it.
#pragma once

#include <cstdint>

namespace anatomy {

// PCG32 (O'Neill, 2014): small, fast, statistically sound, and trivially serializable.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { seed_(seed); }
  void seed_(uint64_t seed);
  uint32_t next_u32() {  // inline: the samplers draw one at a time
    const uint64_t old = state_;
    state_ = old * kMultiplier + inc_;
    return output(old);
  }
  float uniform() { return to_uniform(next_u32()); }  // [0, 1)
  float normal();                                     // N(0, 1), Box-Muller
  // Moves the stream `delta` calls of next_u32 ahead in O(log delta) steps (Brown, "Random
  // number generation with arbitrary strides", 1994: the LCG's multiply-add composed with
  // itself by squaring), so that a thread can start at its share of one stream.
  void advance(uint64_t delta);
  struct State {
    uint64_t state, inc;
    bool has_spare;
    float spare;
  };
  State get_state() const { return {state_, inc_, has_spare_, spare_}; }
  void set_state(const State& s);

  // The LCG's multiplier, PCG's output of a state and a draw's float: public for the fast fill
  // (kernels/uniform_fill.hpp), which steps several states at once.
  static constexpr uint64_t kMultiplier = 6364136223846793005ULL;
  // PCG's XSH-RR output of the state before a step.
  static uint32_t output(uint64_t old) {
    const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
  }
  // The top 24 bits as a float in [0, 1): every value exact.
  static float to_uniform(uint32_t u) { return static_cast<float>(u >> 8) * 0x1.0p-24f; }

 private:
  uint64_t state_ = 0, inc_ = 1;
  bool has_spare_ = false;
  float spare_ = 0.0f;
};

// The generator of randn, dropout and the rest: the process's one, or on a thread inside a
// GeneratorGuard, the guard's.
Generator& default_generator();
void manual_seed(uint64_t seed);  // seeds the process's generator

// While alive, default_generator() on this thread is `g`: the parts of a data-parallel step
// (nn::DataParallel) run at once on different threads, and each draws its dropout masks from a
// generator of its own, so that the draws do not depend on which thread came first.
class GeneratorGuard {
 public:
  explicit GeneratorGuard(Generator& g);
  ~GeneratorGuard();
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator* previous_;
};

}  // namespace anatomy
