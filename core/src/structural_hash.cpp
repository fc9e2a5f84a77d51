// The structural hash identifies a graph up to node ids and names, so that two search candidates
// reached by different substitution orders are recognised as one. Each node hashes its operator,
// attributes, output shapes and the hashes of the tensors it reads (in slot order); the graph hashes
// the sorted multiset of node hashes.
#include <algorithm>
#include <cstring>

#include "unity/core/graph.h"

namespace unity {
namespace {

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
  std::uint64_t value() const {
    // splitmix64 finaliser: FNV alone mixes the last bytes poorly.
    std::uint64_t z = h_ + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t h_ = 14695981039346656037ULL;
};

void hash_attr(Hasher& h, const AttrValue& v) {
  h.u64(v.index());
  if (auto* i = std::get_if<std::int64_t>(&v)) h.i64(*i);
  if (auto* d = std::get_if<double>(&v)) h.bytes(d, sizeof *d);
  if (auto* s = std::get_if<std::string>(&v)) h.str(*s);
  if (auto* l = std::get_if<std::vector<std::int64_t>>(&v)) {
    h.u64(l->size());
    for (auto x : *l) h.i64(x);
  }
}

void hash_shape(Hasher& h, const ParallelTensorShape& s) {
  h.u64(s.dims.size());
  for (const auto& d : s.dims) {
    h.i64(d.size);
    h.i64(d.degree);
  }
  h.i64(s.replica);
  h.u64(static_cast<std::uint64_t>(s.dtype));
}

}  // namespace

std::uint64_t Graph::structural_hash() const {
  std::map<NodeId, std::uint64_t> node_hash;
  std::vector<std::uint64_t> all;
  all.reserve(nodes_.size());
  for (NodeId id : topological_order()) {
    const Node& n = nodes_.at(id);
    Hasher h;
    h.u64(static_cast<std::uint64_t>(n.op.type));
    h.u64(n.op.attrs.items().size());
    for (const auto& [key, value] : n.op.attrs.items()) {
      h.str(key);
      hash_attr(h, value);
    }
    h.u64(n.outputs.size());
    for (const auto& s : n.outputs) hash_shape(h, s);
    h.u64(n.inputs.size());
    for (const auto& in : n.inputs) {
      h.u64(node_hash.at(in.node));
      h.i64(in.index);
    }
    node_hash[id] = h.value();
    all.push_back(h.value());
  }
  std::sort(all.begin(), all.end());
  Hasher g;
  for (auto v : all) g.u64(v);
  return g.value();
}

}  // namespace unity
