// Axis ticks a person reads at a glance: 1, 2 or 5 times a power of ten (0, 0.5, 1, 1.5 rather
// than 0.137, 0.412, ...), as plotting libraries choose them.
#pragma once

#include <string>
#include <vector>

namespace anatomy::viz {

// About `count` round values covering [lo, hi]: the first <= lo, the last >= hi, evenly spaced.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

// A tick's label with as many decimals as the spacing between ticks needs ("0.5", "1000").
std::string tick_label(double value, double spacing);

}  // namespace anatomy::viz
