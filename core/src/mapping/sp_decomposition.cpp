#include "unity/core/mapping/sp_decomposition.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace unity {
namespace {

// Reachability inside a set of nodes (given in topological order), as bitsets.
class Reach {
 public:
  Reach(const PlacementGraph& pg, const std::vector<NodeId>& members) : n_(members.size()) {
    words_ = (n_ + 63) / 64;
    for (std::size_t i = 0; i < n_; ++i) index_[members[i]] = i;
    anc_.assign(n_ * words_, 0);
    desc_.assign(n_ * words_, 0);
    for (std::size_t i = 0; i < n_; ++i)
      for (NodeId p : pg.predecessors(members[i])) {
        auto it = index_.find(p);
        if (it == index_.end()) continue;
        set(anc_, i, it->second);
        merge(anc_, i, it->second);
      }
    for (std::size_t i = n_; i-- > 0;)
      for (NodeId s : pg.successors(members[i])) {
        auto it = index_.find(s);
        if (it == index_.end()) continue;
        set(desc_, i, it->second);
        merge(desc_, i, it->second);
      }
  }
  std::size_t ancestors(std::size_t i) const { return count(anc_, i); }
  std::size_t descendants(std::size_t i) const { return count(desc_, i); }
  bool is_ancestor(std::size_t a, std::size_t of) const {
    return (anc_[of * words_ + a / 64] >> (a % 64)) & 1;
  }

 private:
  void set(std::vector<std::uint64_t>& m, std::size_t row, std::size_t bit) {
    m[row * words_ + bit / 64] |= std::uint64_t{1} << (bit % 64);
  }
  void merge(std::vector<std::uint64_t>& m, std::size_t row, std::size_t from) {
    for (std::size_t w = 0; w < words_; ++w) m[row * words_ + w] |= m[from * words_ + w];
  }
  std::size_t count(const std::vector<std::uint64_t>& m, std::size_t row) const {
    std::size_t c = 0;
    for (std::size_t w = 0; w < words_; ++w) c += __builtin_popcountll(m[row * words_ + w]);
    return c;
  }
  std::size_t n_, words_;
  std::unordered_map<NodeId, std::size_t> index_;
  std::vector<std::uint64_t> anc_, desc_;
};

}  // namespace

SpDecomposition::SpDecomposition(const PlacementGraph& placement, bool balanced)
    : placement_(placement), balanced_(balanced) {
  if (!placement.placed().empty()) root_ = build(placement.placed());
}

int SpDecomposition::build(const std::vector<NodeId>& members) {
  SpNode sp;
  sp.members = members;
  const std::unordered_set<NodeId> inside(members.begin(), members.end());
  std::unordered_set<NodeId> boundary;
  for (NodeId m : members) {
    for (NodeId p : placement_.predecessors(m))
      if (!inside.count(p)) boundary.insert(p);
    for (NodeId s : placement_.successors(m))
      if (!inside.count(s)) boundary.insert(s);
  }
  sp.boundary.assign(boundary.begin(), boundary.end());
  std::sort(sp.boundary.begin(), sp.boundary.end());

  if (members.size() == 1) {
    sp.kind = SpNode::Kind::Leaf;
    sp.node = members[0];
    nodes_.push_back(std::move(sp));
    return size() - 1;
  }

  // Parallel split: the weakly connected components, in two halves of about equal size. Halves
  // rather than "the first component against the rest" keep wide graphs (DLRM's 26 tables) shallow:
  // the DP then meets log(m) nested splits, not m, and far fewer device blocks.
  std::unordered_map<NodeId, int> component_of;
  std::vector<std::size_t> component_size;
  for (NodeId start : members) {
    if (component_of.count(start)) continue;
    const int c = static_cast<int>(component_size.size());
    component_size.push_back(0);
    std::vector<NodeId> stack{start};
    component_of[start] = c;
    while (!stack.empty()) {
      NodeId x = stack.back();
      stack.pop_back();
      ++component_size[c];
      auto visit = [&](NodeId y) {
        if (inside.count(y) && component_of.emplace(y, c).second) stack.push_back(y);
      };
      for (NodeId p : placement_.predecessors(x)) visit(p);
      for (NodeId s : placement_.successors(x)) visit(s);
    }
  }
  std::vector<NodeId> first, second;
  if (component_size.size() > 1) {
    // Components in the order of their first member; the first half takes them until it holds
    // half of the members (at least one, and never all).
    std::size_t taken = 0, last = 0;
    while (balanced_ && last + 1 < component_size.size() &&
           2 * (taken + component_size[last]) <= members.size())
      taken += component_size[last++];
    if (last == 0) last = 1;
    wide_parallel_ |= component_size.size() > 2;
    for (NodeId m : members)
      (component_of[m] < static_cast<int>(last) ? first : second).push_back(m);
    sp.kind = SpNode::Kind::Parallel;
    const int a = build(first);
    const int b = build(second);
    sp.first = a;
    sp.second = b;
    nodes_.push_back(std::move(sp));
    return size() - 1;
  }

  // Sequence split at the first node (in topological order) that every other member reaches or is
  // reached from; if there is none, after the first member.
  const Reach reach(placement_, members);
  std::size_t split = 0;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (reach.ancestors(i) + reach.descendants(i) + 1 == members.size()) {
      split = i;
      break;
    }
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i == split) continue;
    (reach.is_ancestor(i, split) ? first : second).push_back(members[i]);
  }
  sp.kind = SpNode::Kind::Series;
  sp.node = members[split];
  const int a = first.empty() ? -1 : build(first);
  const int b = second.empty() ? -1 : build(second);
  sp.first = a;
  sp.second = b;
  nodes_.push_back(std::move(sp));
  return size() - 1;
}

}  // namespace unity
