// The structural hash identifies a graph up to node ids and names, so that two search candidates
// reached by different substitution orders are recognised as one. Each node hashes its operator,
// attributes, output shapes and the hashes of the tensors it reads (in slot order); the graph
// hashes the sorted multiset of node hashes.
#include <algorithm>

#include "hashing.h"

namespace unity {
namespace detail {

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

void hash_operator(Hasher& h, const Node& n) {
  h.u64(static_cast<std::uint64_t>(n.op.type));
  h.u64(n.op.attrs.items().size());
  for (const auto& [key, value] : n.op.attrs.items()) {
    h.str(key);
    hash_attr(h, value);
  }
  h.u64(n.op.values ? n.op.values->digest() : 0);
  h.u64(n.outputs.size());
  for (const auto& s : n.outputs) hash_shape(h, s);
}

}  // namespace detail

std::uint64_t Graph::structural_hash() const {
  std::map<NodeId, std::uint64_t> node_hash;
  std::vector<std::uint64_t> all;
  all.reserve(nodes_.size());
  for (NodeId id : topological_order()) {
    const Node& n = nodes_.at(id);
    detail::Hasher h;
    detail::hash_operator(h, n);
    h.u64(n.inputs.size());
    for (const auto& in : n.inputs) {
      h.u64(node_hash.at(in.node));
      h.i64(in.index);
    }
    node_hash[id] = h.value();
    all.push_back(h.value());
  }
  std::sort(all.begin(), all.end());
  detail::Hasher g;
  for (auto v : all) g.u64(v);
  return g.value();
}

}  // namespace unity
