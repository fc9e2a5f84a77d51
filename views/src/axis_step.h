#pragma once
// Axis ticks that read well: steps of 1, 2 or 5 times a power of ten.
#include <algorithm>
#include <cmath>

namespace unity::views {

// The step giving about `ticks` ticks over `span` (1 for an empty span).
inline double niceStep(double span, int ticks) {
  if (span <= 0) return 1;
  const double raw = span / std::max(1, ticks);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

}  // namespace unity::views
