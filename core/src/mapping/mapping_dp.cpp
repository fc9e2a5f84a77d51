#include <algorithm>
#include <limits>
#include <unordered_map>

#include "hashing.h"
#include "mapping/part_signature.h"
#include "unity/core/machine_mapping.h"

namespace unity {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct KeyHash {
  template <class T>
  std::size_t operator()(const std::vector<T>& k) const {
    std::size_t h = 1469598103934665603ULL;
    for (T x : k) h = (h ^ (static_cast<std::size_t>(x) + 0x9e3779b9)) * 1099511628211ULL;
    return h;
  }
};

struct PairHash {
  std::size_t operator()(const std::pair<NodeId, int>& p) const {
    return std::hash<NodeId>()(p.first) * 31 + std::hash<int>()(p.second);
  }
};

struct EdgeKey {
  std::uint64_t producer_view, consumer_view;
  bool operator==(const EdgeKey&) const = default;
};

struct EdgeKeyHash {
  static std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t operator()(const EdgeKey& k) const {
    return mix(k.producer_view ^ mix(k.consumer_view + 0x9e3779b97f4a7c15ULL));
  }
};

CostBreakdown infeasible() { return {kInfinity, 0, 0}; }

// Side by side: the slower part is the critical path; bytes are sent by both.
CostBreakdown side_by_side(const CostBreakdown& a, const CostBreakdown& b) {
  CostBreakdown c = a.time() >= b.time() ? a : b;
  c.bytes = a.bytes + b.bytes;
  return c;
}

}  // namespace

// Views are interned by (task grid, block) so that their ids mean the same in every candidate, and
// solved parts are keyed by content (part_signature.h) instead of node ids.
struct MappingCache::Impl {
  std::vector<MachineView> views;
  std::unordered_map<std::vector<int>, std::vector<int>, KeyHash> view_ids;
  struct Value {
    CostBreakdown cost;
  };
  // Keyed by a 64-bit digest of (part content, block, boundary views): a collision needs ~2^32
  // entries to become likely, far beyond what a search fills.
  std::unordered_map<std::uint64_t, Value> memo;
};

MappingCache::MappingCache() : impl_(std::make_unique<Impl>()) {}
MappingCache::~MappingCache() = default;
std::size_t MappingCache::size() const { return impl_->memo.size(); }

namespace {

class MappingSearch {
 public:
  explicit MappingSearch(const MappingCost& costs, MappingCache::Impl* shared = nullptr,
                         bool balanced = true)
      : costs_(costs), sp_(costs.placement(), balanced), shared_(shared) {
    if (shared_) signatures_ = detail::part_signatures(sp_, costs.placement());
  }

  // The cost alone, with subproblems shared through the cache.
  MappingEstimate estimate(DeviceBlock block) {
    MappingEstimate e;
    if (sp_.root() < 0) {
      e.feasible = true;
      return e;
    }
    e.cost = solve(sp_.root(), block).cost;
    e.feasible = e.cost.time() < kInfinity;
    e.subproblems = misses_;
    return e;
  }

  bool has_wide_parallel() const { return sp_.has_wide_parallel(); }

  MachineMapping run(DeviceBlock block) {
    MachineMapping result;
    if (sp_.root() < 0) {
      result.feasible = true;
      result.fits_in_memory = true;
      return result;
    }
    const Entry root = solve(sp_.root(), block);
    result.subproblems = memo_.size();
    result.feasible = root.cost.time() < kInfinity;
    if (!result.feasible) return result;
    collect(sp_.root(), block, result.views);
    result.cost = root.cost;
    return result;
  }

 private:
  struct Entry {
    CostBreakdown cost;
    int view = -1;          // Leaf / Series: the chosen view of the node
    ParallelChoice choice;  // Parallel
  };

  const std::vector<int>& views(NodeId node, DeviceBlock block) {
    if (shared_) {
      std::vector<int> key = costs_.extents(node);
      key.push_back(block.start);
      key.push_back(block.size);
      auto it = shared_->view_ids.find(key);
      if (it != shared_->view_ids.end()) return it->second;
      std::vector<int> ids;
      for (auto& v : candidate_views(costs_.extents(node), block, align(block))) {
        shared_->views.push_back(std::move(v));
        ids.push_back(static_cast<int>(shared_->views.size()) - 1);
      }
      return shared_->view_ids.emplace(std::move(key), std::move(ids)).first->second;
    }
    std::vector<int> key{static_cast<int>(node), block.start, block.size};
    auto it = view_cache_.find(key);
    if (it != view_cache_.end()) return it->second;
    std::vector<int> ids;
    for (auto& v : candidate_views(costs_.extents(node), block, align(block))) {
      view_table_.push_back(std::move(v));
      ids.push_back(static_cast<int>(view_table_.size()) - 1);
    }
    return view_cache_.emplace(std::move(key), std::move(ids)).first->second;
  }

  // Grid starts in blocks of several nodes: node boundaries only, and at most kMaxStarts of them
  // (see candidate_views), so that a state's work does not grow with the machine: small grids
  // reach other places through side-by-side divisions.
  static constexpr int kMaxStarts = 8;
  int align(DeviceBlock block) const {
    const int per_node = costs_.model().machine().devices_per_node;
    if (block.size <= per_node) return 1;
    const int nodes = block.size / per_node;
    return per_node * ((nodes + kMaxStarts - 1) / kMaxStarts);
  }

  const MachineView& view(int id) const { return shared_ ? shared_->views[id] : view_table_[id]; }

  int tasks(int index) {
    if (tasks_.empty()) tasks_.assign(sp_.size(), -1);
    if (tasks_[index] < 0) tasks_[index] = max_tasks(costs_, sp_, index);
    return tasks_[index];
  }

  const CostBreakdown& node_cost(NodeId node, int view) {
    auto key = std::make_pair(node, view);
    auto it = node_cache_.find(key);
    if (it != node_cache_.end()) return it->second;
    return node_cache_.emplace(key, costs_.node_cost(node, this->view(view))).first->second;
  }

  // One edge's cost for two views, memoised: the same pair comes up in many subproblems. The key is
  // exact (ids and view numbers packed), hashed with a cheap mixer: this lookup is the DP's hottest.
  const CostBreakdown& edge(NodeId producer, int pv, NodeId consumer, int cv) {
    const EdgeKey key{(static_cast<std::uint64_t>(producer) << 32) | static_cast<std::uint32_t>(pv),
                      (static_cast<std::uint64_t>(consumer) << 32) | static_cast<std::uint32_t>(cv)};
    if (auto it = edge_cache_.find(key); it != edge_cache_.end()) return it->second;
    return edge_cache_
        .emplace(key, costs_.edge_cost(producer, this->view(pv), consumer, this->view(cv)))
        .first->second;
  }

  // Edges between `node` (on `view`) and the boundary nodes of a part, whose views are fixed.
  CostBreakdown boundary_edges(NodeId node, int view, const SpNode& part) {
    CostBreakdown c;
    const auto& pg = costs_.placement();
    const auto& preds = pg.predecessors(node);
    const auto& succs = pg.successors(node);
    for (NodeId b : part.boundary) {
      const int bv = assigned_.at(b);
      if (std::find(preds.begin(), preds.end(), b) != preds.end()) c += edge(b, bv, node, view);
      if (std::find(succs.begin(), succs.end(), b) != succs.end()) c += edge(node, view, b, bv);
    }
    return c;
  }

  std::uint64_t memo_key(int index, DeviceBlock block) const {
    const SpNode& part = sp_.node(index);
    detail::Hasher h;
    h.i64(index);
    h.i64(block.start);
    h.i64(block.size);
    for (NodeId b : part.boundary) h.i64(assigned_.at(b));
    return h.value();
  }

  // The content key of a part: its signature, the block, and the views fixed on its boundary in
  // canonical order (sorted among symmetric boundary operators).
  std::uint64_t shared_key(int index, DeviceBlock block) const {
    const auto& sig = signatures_[index];
    detail::Hasher h;
    h.u64(sig.content);
    h.i64(block.start);
    h.i64(block.size);
    std::size_t i = 0;
    while (i < sig.boundary.size()) {
      std::size_t j = i;
      if (j + 1 < sig.boundary.size() && sig.boundary_keys[j + 1] == sig.boundary_keys[i]) {
        std::vector<int> run;  // symmetric boundary operators: their views in sorted order
        while (j < sig.boundary.size() && sig.boundary_keys[j] == sig.boundary_keys[i])
          run.push_back(assigned_.at(sig.boundary[j++]));
        std::sort(run.begin(), run.end());
        for (int v : run) h.i64(v);
      } else {
        h.i64(assigned_.at(sig.boundary[j++]));
      }
      i = j;
    }
    return h.value();
  }

  Entry solve(int index, DeviceBlock block) {
    if (shared_) {
      const std::uint64_t skey = shared_key(index, block);
      if (auto it = shared_->memo.find(skey); it != shared_->memo.end())
        return Entry{it->second.cost, -1, {}};
      const Entry e = solve_part(index, block);
      ++misses_;
      shared_->memo.emplace(skey, MappingCache::Impl::Value{e.cost});
      return e;
    }
    const std::uint64_t key = memo_key(index, block);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Entry e = solve_part(index, block);
    memo_.emplace(key, e);
    return e;
  }

  Entry solve_part(int index, DeviceBlock block) {
    const SpNode& part = sp_.node(index);
    Entry best{infeasible(), -1, {}};
    switch (part.kind) {
      case SpNode::Kind::Leaf:
        for (int v : views(part.node, block)) {
          CostBreakdown c = node_cost(part.node, v);
          c += boundary_edges(part.node, v, part);
          if (c.time() < best.cost.time()) best = {c, v, {}};
        }
        break;
      case SpNode::Kind::Series:
        for (int v : views(part.node, block)) {
          CostBreakdown c = node_cost(part.node, v);
          c += boundary_edges(part.node, v, part);
          assigned_[part.node] = v;
          if (part.first >= 0 && c.time() < kInfinity) c += solve(part.first, block).cost;
          if (part.second >= 0 && c.time() < kInfinity) c += solve(part.second, block).cost;
          assigned_.erase(part.node);
          if (c.time() < best.cost.time()) best = {c, v, {}};
        }
        break;
      case SpNode::Kind::Parallel: {
        CostBreakdown seq = solve(part.first, block).cost;
        if (seq.time() < kInfinity) seq += solve(part.second, block).cost;
        best = {seq, -1, {0, true}};
        for (int k : parallel_divisions(costs_.model().machine(), block, tasks(part.first),
                                        tasks(part.second))) {
          for (bool low : {true, false}) {
            const DeviceBlock a =
                low ? DeviceBlock{block.start, k} : DeviceBlock{block.start + block.size - k, k};
            const DeviceBlock b = low ? DeviceBlock{block.start + k, block.size - k}
                                      : DeviceBlock{block.start, block.size - k};
            const CostBreakdown ca = solve(part.first, a).cost;
            if (ca.time() >= best.cost.time()) continue;
            const CostBreakdown cb = solve(part.second, b).cost;
            const CostBreakdown c = side_by_side(ca, cb);
            if (c.time() < best.cost.time()) best = {c, -1, {k, low}};
          }
        }
        break;
      }
    }
    return best;
  }

  void collect(int index, DeviceBlock block, std::map<NodeId, MachineView>& out) {
    const Entry e = memo_.at(memo_key(index, block));
    const SpNode& part = sp_.node(index);
    switch (part.kind) {
      case SpNode::Kind::Leaf:
        out[part.node] = view(e.view);
        break;
      case SpNode::Kind::Series:
        out[part.node] = view(e.view);
        assigned_[part.node] = e.view;
        if (part.first >= 0) collect(part.first, block, out);
        if (part.second >= 0) collect(part.second, block, out);
        assigned_.erase(part.node);
        break;
      case SpNode::Kind::Parallel: {
        const int k = e.choice.first_size;
        if (k == 0) {
          collect(part.first, block, out);
          collect(part.second, block, out);
        } else {
          const bool low = e.choice.first_low;
          collect(part.first,
                  low ? DeviceBlock{block.start, k} : DeviceBlock{block.start + block.size - k, k},
                  out);
          collect(part.second,
                  low ? DeviceBlock{block.start + k, block.size - k}
                      : DeviceBlock{block.start, block.size - k},
                  out);
        }
        break;
      }
    }
  }

  const MappingCost& costs_;
  SpDecomposition sp_;
  std::vector<MachineView> view_table_;
  std::unordered_map<std::vector<int>, std::vector<int>, KeyHash> view_cache_;
  std::unordered_map<std::pair<NodeId, int>, CostBreakdown, PairHash> node_cache_;
  std::unordered_map<std::uint64_t, Entry> memo_;
  std::unordered_map<EdgeKey, CostBreakdown, EdgeKeyHash> edge_cache_;
  std::vector<int> tasks_;
  std::unordered_map<NodeId, int> assigned_;  // views of nodes fixed by enclosing splits
  MappingCache::Impl* shared_ = nullptr;
  std::vector<detail::PartSignature> signatures_;
  std::size_t misses_ = 0;
};

}  // namespace

std::vector<int> resource_splits(const MachineSpec& machine, DeviceBlock block) {
  std::vector<int> out;
  const int per_node = machine.devices_per_node;
  if (block.size > per_node && block.size % per_node == 0 && block.start % per_node == 0) {
    for (int k = per_node; k < block.size; k += per_node) out.push_back(k);
  } else {
    for (int k = 1; k < block.size; ++k) out.push_back(k);
  }
  return out;
}

std::vector<int> parallel_divisions(const MachineSpec& machine, DeviceBlock block, int first_tasks,
                                    int second_tasks) {
  std::vector<int> valid;
  for (int k : resource_splits(machine, block))
    if (k >= first_tasks && block.size - k >= second_tasks) valid.push_back(k);
  if (valid.empty()) return valid;
  const int island = machine.island_size(), node = machine.devices_per_node;
  std::vector<int> out;
  auto keep = [&](int k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  // From the first part's side: the tightest fit, then the smallest island and node multiples.
  keep(valid.front());
  for (int unit : {island, node})
    for (int k : valid)
      if (unit > 0 && k % unit == 0) {
        keep(k);
        break;
      }
  // From the second part's side, likewise.
  keep(valid.back());
  for (int unit : {island, node})
    for (auto it = valid.rbegin(); it != valid.rend(); ++it)
      if (unit > 0 && (block.size - *it) % unit == 0) {
        keep(*it);
        break;
      }
  std::sort(out.begin(), out.end());
  return out;
}

int max_tasks(const MappingCost& costs, const SpDecomposition& sp, int index) {
  int most = 1;
  for (NodeId id : sp.node(index).members) {
    int t = 1;
    for (int e : costs.extents(id)) t *= e;
    most = std::max(most, t);
  }
  return most;
}

MachineMapping optimize_machine_mapping(const MappingCost& costs, DeviceBlock block) {
  MappingSearch search(costs);
  MachineMapping m = search.run(block);
  if (search.has_wide_parallel()) {
    // The other decomposition of wide parallel splits (see SpDecomposition): the better mapping.
    MappingSearch one_by_one(costs, nullptr, false);
    MachineMapping other = one_by_one.run(block);
    if (other.feasible && (!m.feasible || other.cost.time() < m.cost.time())) m = std::move(other);
  }
  if (!m.feasible) return m;
  const auto& pg = costs.placement();
  for (NodeId id : pg.placed()) {
    OpCost op;
    op.node = id;
    op.view = m.views.at(id);
    const OpTimes times = costs.op_times(id, op.view);
    op.forward = times.forward;
    op.backward = times.backward;
    std::vector<double> mem(costs.model().machine().num_devices(), 0.0);
    costs.add_node_memory(id, op.view, mem);
    op.memory = *std::max_element(mem.begin(), mem.end());
    op.own = costs.node_cost(id, op.view);
    for (NodeId p : pg.predecessors(id)) op.edges += costs.edge_cost(p, m.views.at(p), id, op.view);
    m.per_op.push_back(std::move(op));
  }
  m.memory_per_device = costs.memory_per_device(m.views);
  const auto& machine = costs.model().machine();
  m.fits_in_memory = true;
  for (int d = 0; d < static_cast<int>(m.memory_per_device.size()); ++d) {
    m.peak_memory = std::max(m.peak_memory, m.memory_per_device[d]);
    if (m.memory_per_device[d] > static_cast<double>(machine.device(d).memory_bytes))
      m.fits_in_memory = false;
  }
  return m;
}

MappingEstimate estimate_machine_mapping(const MappingCost& costs, MappingCache* cache) {
  return estimate_machine_mapping(costs, {0, costs.model().machine().num_devices()}, cache);
}

MappingEstimate estimate_machine_mapping(const MappingCost& costs, DeviceBlock block,
                                         MappingCache* cache) {
  if (!cache) {
    const MachineMapping m = optimize_machine_mapping(costs, block);
    return {m.feasible, m.cost, m.subproblems};
  }
  MappingSearch search(costs, cache->impl_.get());
  return search.estimate(block);
}

MachineMapping optimize_machine_mapping(const MappingCost& costs) {
  return optimize_machine_mapping(costs, {0, costs.model().machine().num_devices()});
}

}  // namespace unity
