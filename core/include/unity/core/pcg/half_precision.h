#pragma once
// The 16-bit floating-point patterns ONNX files hold (IEEE half and bfloat16), as float32.
#include <bit>
#include <cmath>
#include <cstdint>

namespace unity {

inline float half_to_float(std::uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

inline float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace unity
