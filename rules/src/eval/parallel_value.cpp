#include "unity/rules/parallel_value.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace unity::rules {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64 finaliser over the running hash: cheap and well distributed.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

std::uint64_t rounded_bits(double x) {
  if (std::isnan(x)) return 0x7ff8000000000001ULL;
  if (x == 0.0) return 0;  // +0 and -0
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  // Keep sign, exponent and the top 30 mantissa bits, rounding the rest to nearest.
  const std::uint64_t drop = 52 - 30;
  bits += std::uint64_t{1} << (drop - 1);
  return bits >> drop;
}

}  // namespace

ParallelValue ParallelValue::serial(DenseTensor t, DataType dtype) {
  ParallelValue v;
  v.shape = ParallelTensorShape::serial(t.sizes, dtype);
  v.data.push_back(std::move(t));
  return v;
}

std::string ParallelValue::describe() const {
  std::string s = shape.to_string();
  if (shape.replica > 1) s += " replicas " + layout.to_string();
  if (stages > 1) s += fmt::format(" in {} micro-batches", stages);
  return s;
}

bool approx_equal(const ParallelValue& a, const ParallelValue& b, double tolerance) {
  if (a.shape != b.shape || a.layout != b.layout || a.stages != b.stages) return false;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (!approx_equal(a.data[i], b.data[i], tolerance)) return false;
  return true;
}

std::uint64_t fingerprint(const ParallelValue& v) {
  std::uint64_t h = mix(0, static_cast<std::uint64_t>(v.shape.dtype));
  h = mix(h, static_cast<std::uint64_t>(v.shape.replica));
  h = mix(h, static_cast<std::uint64_t>(v.stages));
  for (const auto& d : v.shape.dims) {
    h = mix(h, static_cast<std::uint64_t>(d.size));
    h = mix(h, static_cast<std::uint64_t>(d.degree));
  }
  for (const auto& f : v.layout.factors())
    h = mix(h, static_cast<std::uint64_t>(f.size * 2 + f.partial));
  for (const auto& t : v.data)
    for (double x : t.data) h = mix(h, rounded_bits(x));
  return h;
}

std::string describe_difference(const ParallelValue& a, const ParallelValue& b) {
  if (a.shape != b.shape)
    return fmt::format("shapes differ: {} vs {}", a.shape.to_string(), b.shape.to_string());
  if (a.layout != b.layout)
    return fmt::format("replicas differ: {} vs {}", a.layout.to_string(), b.layout.to_string());
  if (a.stages != b.stages)
    return fmt::format("micro-batches differ: {} vs {}", a.stages, b.stages);
  for (std::size_t p = 0; p < a.data.size(); ++p) {
    const auto& x = a.data[p];
    const auto& y = b.data[p];
    for (std::size_t i = 0; i < x.data.size(); ++i) {
      DenseTensor one({1}, x.data[i]), two({1}, y.data[i]);
      if (approx_equal(one, two)) continue;
      std::vector<std::int64_t> index(x.sizes.size());
      std::int64_t rest = static_cast<std::int64_t>(i);
      for (int d = x.rank() - 1; d >= 0; --d) {
        index[d] = rest % x.sizes[d];
        rest /= x.sizes[d];
      }
      const int stage = static_cast<int>(p) / a.shape.replica;
      const int replica = static_cast<int>(p) % a.shape.replica;
      std::string where = a.shape.replica > 1 ? fmt::format("replica {} ", replica) : "";
      if (a.stages > 1) where = fmt::format("micro-batch {} ", stage) + where;
      return fmt::format("{}element [{}]: {:.6g} vs {:.6g}", where, fmt::join(index, ", "),
                         x.data[i], y.data[i]);
    }
  }
  return "equal";
}

}  // namespace unity::rules
