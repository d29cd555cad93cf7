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
  uint32_t next_u32();
  float uniform();  // [0, 1)
  float normal();   // N(0, 1), Box-Muller
  struct State {
    uint64_t state, inc;
    bool has_spare;
    float spare;
  };
  State get_state() const { return {state_, inc_, has_spare_, spare_}; }
  void set_state(const State& s);

 private:
  uint64_t state_ = 0, inc_ = 1;
  bool has_spare_ = false;
  float spare_ = 0.0f;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace anatomy
