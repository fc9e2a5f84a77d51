#pragma once
// The Random operator's numbers: each element's value is a function of the node's seed for the
// iteration and the element's index in the whole tensor, so that a tensor split over any devices,
// or copied to several, holds the numbers the one-device run draws (as Dropout's mask does).
#include <cmath>
#include <cstdint>
#include <string_view>

#include "unity/core/pcg/operator.h"

namespace unity::random_values {

enum class Distribution { Normal, Uniform, Bernoulli };

struct RandomFunction {
  Distribution distribution = Distribution::Normal;
  double mean = 0, scale = 1;  // normal
  double low = 0, high = 1;    // uniform
};

// The `distribution` attribute's value; false for an unknown name.
inline bool distribution_of(std::string_view name, Distribution& d) {
  if (name == "normal")
    d = Distribution::Normal;
  else if (name == "uniform")
    d = Distribution::Uniform;
  else if (name == "bernoulli")
    d = Distribution::Bernoulli;
  else
    return false;
  return true;
}

inline RandomFunction random_function(const Operator& op) {
  RandomFunction f;
  distribution_of(op.attrs.get_string("distribution", "normal"), f.distribution);
  f.mean = op.attrs.get_double("mean", 0.0);
  f.scale = op.attrs.get_double("scale", 1.0);
  f.low = op.attrs.get_double("low", 0.0);
  f.high = op.attrs.get_double("high", 1.0);
  return f;
}

// splitmix64's finaliser.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform number in (0, 1) for stream `stream` of element `index`.
inline double uniform(std::uint64_t seed, std::int64_t index, std::uint64_t stream) {
  const std::uint64_t h = mix(seed ^ mix(static_cast<std::uint64_t>(index) * 2 + stream));
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Element `index`'s value; `p` is its probability (Bernoulli's input), unused otherwise.
inline double draw(const RandomFunction& f, std::uint64_t seed, std::int64_t index, double p) {
  const double u = uniform(seed, index, 0);
  switch (f.distribution) {
    case Distribution::Uniform:
      return f.low + (f.high - f.low) * u;
    case Distribution::Bernoulli:
      return u < p ? 1.0 : 0.0;
    case Distribution::Normal:
      break;
  }
  // Box-Muller with a second uniform of the element's own.
  constexpr double kTau = 6.283185307179586;
  const double z = std::sqrt(-2.0 * std::log(u)) * std::cos(kTau * uniform(seed, index, 1));
  return f.mean + f.scale * z;
}

}  // namespace unity::random_values
