// The next n uniform draws of a generator, in SIMD lanes: dropout draws one number per element of
// every activation, and one stream of PCG steps waits on each multiply before the next.
#pragma once

#include <cstdint>

#include "autograd/random.hpp"

namespace anatomy {

// out[0..n) = the next n g.uniform()s, as n calls would give them, and g left where those calls
// would leave it. Lane l steps the stream from call i + l, L calls at a time: the LCG composed L
// times, so the lanes' multiplies are independent.
void uniform_fill(Generator& g, float* out, int64_t n);

}  // namespace anatomy
