#include "viz/ticks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/tensor.hpp"

namespace anatomy::viz {

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi || count < 2)
    throw Error(fmt::format("nice_ticks: expected finite lo <= hi and count >= 2 (got {}, {}, {})",
                            lo, hi, count));
  if (hi == lo) hi = lo + 1;  // one value: a unit range around it
  const double raw = (hi - lo) / (count - 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / power;  // in [1, 10)
  const double step = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double v = first; ticks.empty() || ticks.back() < hi - 1e-9 * step; v += step)
    ticks.push_back(std::abs(v) < 1e-12 * step ? 0.0 : v);  // no "-0"
  return ticks;
}

std::string tick_label(double value, double spacing) {
  const int decimals =
      spacing >= 1 ? 0 : std::min(12, static_cast<int>(std::ceil(-std::log10(spacing) - 1e-9)));
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace anatomy::viz
