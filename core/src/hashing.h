#pragma once
// Hashing of graph content, shared by the structural hash (search candidates) and the mapping cache
// (subgraphs shared between candidates).
#include <cstdint>
#include <cstring>
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity::detail {

// splitmix64's finaliser: a bijection that spreads every input bit over the whole word.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Hasher {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 1099511628211ULL;  // FNV-1a prime
    }
  }
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  void i64(std::int64_t v) { bytes(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  // splitmix64 finaliser: FNV alone mixes the last bytes poorly.
  std::uint64_t value() const { return mix64(h_ + 0x9e3779b97f4a7c15ULL); }

 private:
  std::uint64_t h_ = 14695981039346656037ULL;
};

void hash_attr(Hasher& h, const AttrValue& v);
void hash_shape(Hasher& h, const ParallelTensorShape& s);
// A node's operator, attributes and output shapes: everything but its name, id and wiring.
void hash_operator(Hasher& h, const Node& n);

}  // namespace unity::detail
