#include <algorithm>
#include <deque>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <absl/container/flat_hash_map.h>

#include "hashing.h"
#include "mapping/part_signature.h"
#include "unity/core/mapping/machine_mapping.h"

namespace unity {
namespace {

struct KeyHash {
  template <class T>
  std::size_t operator()(const std::vector<T>& k) const {
    std::size_t h = 1469598103934665603ULL;
    for (T x : k) h = (h ^ (static_cast<std::size_t>(x) + 0x9e3779b9)) * 1099511628211ULL;
    return h;
  }
};

// Word-at-a-time digest for the DP's keys, built once per subproblem visit (the byte-wise
// detail::Hasher is for graph content, hashed once per candidate).
class KeyMixer {
 public:
  void add(std::uint64_t v) { h_ = detail::mix64(h_ ^ (v + 0x9e3779b97f4a7c15ULL)); }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0x6a09e667f3bcc909ULL;
};

// Tables keyed by a digest: open addressing (no allocation per entry, one probe sequence in
// contiguous memory), since the DP does millions of lookups per search.
template <class V>
using DigestMap = absl::flat_hash_map<std::uint64_t, V>;

// A DigestMap that holds at most two generations of `generation` entries: a lookup that finds a
// value in the older generation copies it into the younger, and a full younger generation
// replaces the older. What the search still reads survives; what it stopped reading goes. A
// search over Transformer-sized candidates otherwise stored 18 million solved parts (1.9 GB).
template <class V>
class GenerationalMap {
 public:
  explicit GenerationalMap(std::size_t generation) : generation_(generation) {}
  const V* find(std::uint64_t key) {
    if (auto it = young_.find(key); it != young_.end()) return &it->second;
    if (auto it = old_.find(key); it != old_.end()) return &insert(key, it->second);
    return nullptr;
  }
  const V& insert(std::uint64_t key, V value) {
    if (young_.size() >= generation_) {
      old_ = std::move(young_);
      young_ = DigestMap<V>{};
    }
    return young_.insert_or_assign(key, std::move(value)).first->second;
  }
  std::size_t size() const { return young_.size() + old_.size(); }

 private:
  std::size_t generation_;
  DigestMap<V> young_, old_;
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
  // entries to become likely, far beyond what a search fills. At most 2 x 2^21 entries (about
  // 200 MB).
  GenerationalMap<Value> memo{std::size_t{1} << 21};
  // Operator and edge costs by content and views: most of a candidate's operators and edges are
  // its predecessor's, and costing a view of a wide machine walks every task.
  DigestMap<std::vector<CostBreakdown>> node_rows, edge_rows;
};

MappingCache::MappingCache() : impl_(std::make_unique<Impl>()) {}
MappingCache::~MappingCache() = default;
std::size_t MappingCache::size() const { return impl_->memo.size(); }

namespace {

class MappingSearch {
 public:
  explicit MappingSearch(const MappingCost& costs, MappingCache::Impl* shared = nullptr,
                         bool balanced = true)
      : costs_(costs),
        sp_(costs.placement(), balanced),
        shared_(shared),
        assigned_(static_cast<std::size_t>(costs.placement().graph().next_id()), -1) {
    if (shared_) {
      local_ = detail::operator_signatures(costs.placement());
      signatures_ = detail::part_signatures(sp_, costs.placement(), local_);
    }
    attachments_.resize(static_cast<std::size_t>(sp_.size()));
    for (int i = 0; i < sp_.size(); ++i) attachments_[i] = attach(sp_.node(i));
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
    // Long edges, costed once now that both ends have views (in sequence: an upper bound).
    for (const auto& [producer, consumer] : long_edges_)
      result.cost += costs_.edge_cost(producer, result.views.at(producer), consumer,
                                      result.views.at(consumer));
    return result;
  }

 private:
  struct Entry {
    CostBreakdown cost;
    int view = -1;          // Leaf / Series: the chosen view of the node
    ParallelChoice choice;  // Parallel
  };

  // An edge between a part's own operator (Leaf, Series) and one of its boundary operators.
  struct Attachment {
    NodeId other;           // the boundary operator, whose view is fixed
    bool other_produces;    // the edge runs other -> own operator (else own -> other)
    std::uint64_t content;  // the consumer's content and the slots it reads the producer in
  };

  std::vector<Attachment> attach(const SpNode& part) const {
    std::vector<Attachment> out;
    if (part.kind == SpNode::Kind::Parallel) return out;
    const auto& pg = costs_.placement();
    const auto& preds = pg.predecessors(part.node);
    const auto& succs = pg.successors(part.node);
    for (NodeId b : part.boundary) {
      if (std::find(preds.begin(), preds.end(), b) != preds.end())
        out.push_back({b, true, edge_content(b, part.node)});
      if (std::find(succs.begin(), succs.end(), b) != succs.end())
        out.push_back({b, false, edge_content(part.node, b)});
    }
    return out;
  }

  std::uint64_t edge_content(NodeId producer, NodeId consumer) const {
    if (!shared_) return 0;
    KeyMixer k;
    k.add(local_.at(consumer));
    const auto& inputs = costs_.placement().graph().node(consumer).inputs;
    for (std::size_t s = 0; s < inputs.size(); ++s)
      if (inputs[s].node == producer) {
        k.add(s);
        k.add(static_cast<std::uint64_t>(inputs[s].index));
      }
    return k.value();
  }

  const std::vector<int>& views(NodeId node, DeviceBlock block) {
    const std::uint64_t local_key = (static_cast<std::uint64_t>(node) << 40) ^
                                    (static_cast<std::uint64_t>(block.start) << 20) ^
                                    static_cast<std::uint64_t>(block.size);
    if (auto it = view_lists_.find(local_key); it != view_lists_.end()) return *it->second;
    // The node's candidate views, appended to the view table (the cache's, shared by candidates,
    // or this search's own); their ids in it.
    auto add_views = [&] {
      std::vector<MachineView>& table = shared_ ? shared_->views : view_table_;
      std::vector<int> ids;
      for (auto& v : candidate_views(costs_.extents(node), block, align(block))) {
        table.push_back(std::move(v));
        ids.push_back(static_cast<int>(table.size()) - 1);
      }
      return ids;
    };
    const std::vector<int>* list = nullptr;
    if (shared_) {
      std::vector<int> key = costs_.extents(node);
      key.push_back(block.start);
      key.push_back(block.size);
      auto it = shared_->view_ids.find(key);
      if (it == shared_->view_ids.end())
        it = shared_->view_ids.emplace(std::move(key), add_views()).first;
      list = &it->second;
    } else {
      own_view_lists_.push_back(add_views());
      list = &own_view_lists_.back();
    }
    view_lists_.emplace(local_key, list);
    return *list;
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

  // A cost for every view of `own_views`, computed by `cost_on(view)` once per key of `table`.
  template <class Compute>
  const std::vector<CostBreakdown>& memoised_row(DigestMap<std::vector<CostBreakdown>>& table,
                                                 std::uint64_t key,
                                                 const std::vector<int>& own_views,
                                                 Compute cost_on) {
    auto [it, fresh] = table.try_emplace(key);
    if (fresh) {
      it->second.reserve(own_views.size());
      for (int v : own_views) it->second.push_back(cost_on(view(v)));
    }
    return it->second;
  }

  // A view list is interned once per (task grid, block), its ids consecutive: its first id and
  // length name it.
  static std::uint64_t list_key(const std::vector<int>& views) {
    return (static_cast<std::uint64_t>(views.front()) << 32) | views.size();
  }

  // The operator's own cost on every view of `own_views`, memoised as one row (see edge_row).
  const std::vector<CostBreakdown>& node_row(NodeId node, const std::vector<int>& own_views) {
    KeyMixer k;
    k.add(shared_ ? local_.at(node) : static_cast<std::uint64_t>(node));
    k.add(list_key(own_views));
    return memoised_row(shared_ ? shared_->node_rows : node_rows_, k.value(), own_views,
                        [&](const MachineView& v) { return costs_.node_cost(node, v); });
  }

  // The costs of one boundary edge for every view in `own_views` (the own operator's list in a
  // block) with the boundary operator on `other_view`, memoised as one row: the same row comes up
  // in many subproblems and, with a cache, in many candidates, and one lookup per edge instead of
  // one per edge and view keeps the DP's hottest loop out of the hash table.
  const std::vector<CostBreakdown>& edge_row(const Attachment& a, NodeId own,
                                             const std::vector<int>& own_views, int other_view) {
    KeyMixer k;
    if (shared_) {
      k.add(a.content);
    } else {
      k.add(static_cast<std::uint64_t>(a.other));
      k.add(static_cast<std::uint64_t>(own));
    }
    k.add(a.other_produces);
    k.add(static_cast<std::uint64_t>(other_view));
    k.add(list_key(own_views));
    const MachineView& ov = view(other_view);
    return memoised_row(shared_ ? shared_->edge_rows : edge_rows_, k.value(), own_views,
                        [&](const MachineView& mv) {
                          return a.other_produces ? costs_.edge_cost(a.other, ov, own, mv)
                                                  : costs_.edge_cost(own, mv, a.other, ov);
                        });
  }

  // Every view's own cost plus its edges to the part's boundary operators (whose views are
  // fixed), by position in `own_views`.
  // A boundary operator without a view lies in a sibling part: the edge bypasses the split node
  // between them (a graph that is not series-parallel: DenseNet's concatenations, an
  // encoder-decoder's memory read by every decoder layer). The DP leaves such long edges out and
  // run() adds their cost once every view is chosen.
  std::vector<CostBreakdown> leaf_costs(int index, const std::vector<int>& own_views) {
    const NodeId own = sp_.node(index).node;
    if (own_views.empty()) return {};
    std::vector<CostBreakdown> out = node_row(own, own_views);
    for (const Attachment& a : attachments_[index]) {
      const int other = assigned(a.other);
      if (other < 0) continue;
      const auto& row = edge_row(a, own, own_views, other);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += row[i];
    }
    return out;
  }

  // The view an enclosing split fixed for `id`, or -1 (a long edge's far end).
  int assigned(NodeId id) const { return assigned_[static_cast<std::size_t>(id)]; }

  // The long edges of part `index`'s own operator whose far end has no view here.
  void note_long_edges(int index) {
    const NodeId own = sp_.node(index).node;
    for (const Attachment& a : attachments_[index])
      if (assigned(a.other) < 0)
        long_edges_.insert(a.other_produces ? std::make_pair(a.other, own)
                                            : std::make_pair(own, a.other));
  }

  std::uint64_t memo_key(int index, DeviceBlock block) const {
    const SpNode& part = sp_.node(index);
    KeyMixer k;
    k.add(static_cast<std::uint64_t>(index));
    k.add((static_cast<std::uint64_t>(block.start) << 32) | static_cast<std::uint32_t>(block.size));
    for (NodeId b : part.boundary) k.add(static_cast<std::uint64_t>(assigned(b)));
    return k.value();
  }

  // The content key of a part: its signature, the block, and the views fixed on its boundary in
  // canonical order (sorted among symmetric boundary operators).
  std::uint64_t shared_key(int index, DeviceBlock block) const {
    const auto& sig = signatures_[index];
    KeyMixer k;
    k.add(sig.content);
    k.add((static_cast<std::uint64_t>(block.start) << 32) | static_cast<std::uint32_t>(block.size));
    std::size_t i = 0;
    while (i < sig.boundary.size()) {
      std::size_t j = i;
      if (j + 1 < sig.boundary.size() && sig.boundary_keys[j + 1] == sig.boundary_keys[i]) {
        std::vector<int> run;  // symmetric boundary operators: their views in sorted order
        while (j < sig.boundary.size() && sig.boundary_keys[j] == sig.boundary_keys[i])
          run.push_back(assigned(sig.boundary[j++]));
        std::sort(run.begin(), run.end());
        for (int v : run) k.add(static_cast<std::uint64_t>(v));
      } else {
        k.add(static_cast<std::uint64_t>(assigned(sig.boundary[j++])));
      }
      i = j;
    }
    return k.value();
  }

  Entry solve(int index, DeviceBlock block) {
    if (shared_) {
      const std::uint64_t skey = shared_key(index, block);
      if (const auto* found = shared_->memo.find(skey)) return Entry{found->cost, -1, {}};
      const Entry e = solve_part(index, block);
      ++misses_;
      shared_->memo.insert(skey, MappingCache::Impl::Value{e.cost});
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
    ++work_;
    switch (part.kind) {
      case SpNode::Kind::Leaf: {
        const auto& vs = views(part.node, block);
        const auto own = leaf_costs(index, vs);
        for (std::size_t i = 0; i < vs.size(); ++i)
          if (own[i].time() < best.cost.time()) best = {own[i], vs[i], {}};
        break;
      }
      case SpNode::Kind::Series: {
        const auto& vs = views(part.node, block);
        const auto own = leaf_costs(index, vs);
        // Past the work bound the split operator takes its own cheapest view (given its fixed
        // neighbours) instead of trying each against both sides: the rest of the DP is linear.
        std::size_t only = vs.size();
        if (work_ > kMaxWork && !vs.empty())
          only = static_cast<std::size_t>(
              std::min_element(own.begin(), own.end(),
                               [](const auto& a, const auto& b) { return a.time() < b.time(); }) -
              own.begin());
        for (std::size_t i = 0; i < vs.size(); ++i) {
          if (only < vs.size() && i != only) continue;
          const int v = vs[i];
          CostBreakdown c = own[i];
          assigned_[static_cast<std::size_t>(part.node)] = v;
          if (part.first >= 0 && c.time() < kInfinity) c += solve(part.first, block).cost;
          if (part.second >= 0 && c.time() < kInfinity) c += solve(part.second, block).cost;
          assigned_[static_cast<std::size_t>(part.node)] = -1;
          if (c.time() < best.cost.time()) best = {c, v, {}};
        }
        break;
      }
      case SpNode::Kind::Parallel: {
        CostBreakdown seq = solve(part.first, block).cost;
        if (seq.time() < kInfinity) seq += solve(part.second, block).cost;
        best = {seq, -1, {0, true}};
        // Past the work bound only whole-block placements are tried (see kMaxWork).
        if (work_ > kMaxWork) break;
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
        note_long_edges(index);
        break;
      case SpNode::Kind::Series:
        out[part.node] = view(e.view);
        note_long_edges(index);
        assigned_[static_cast<std::size_t>(part.node)] = e.view;
        if (part.first >= 0) collect(part.first, block, out);
        if (part.second >= 0) collect(part.second, block, out);
        assigned_[static_cast<std::size_t>(part.node)] = -1;
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
  MappingCache::Impl* shared_ = nullptr;
  std::unordered_map<NodeId, std::uint64_t> local_;   // operator signatures, with a cache
  std::vector<detail::PartSignature> signatures_;     // with a cache
  std::vector<std::vector<Attachment>> attachments_;  // by part index
  std::vector<int> assigned_;  // by node id: views fixed by enclosing splits (-1: none)
  std::set<std::pair<NodeId, NodeId>> long_edges_;  // (producer, consumer), found by collect()
  std::vector<MachineView> view_table_;             // without a cache
  std::deque<std::vector<int>> own_view_lists_;
  DigestMap<const std::vector<int>*> view_lists_;
  DigestMap<std::vector<CostBreakdown>> node_rows_, edge_rows_;
  DigestMap<Entry> memo_;
  std::vector<int> tasks_;
  std::size_t misses_ = 0;
  // Subproblems solved by this search. A graph that is far from series-parallel (an unrolled LSTM:
  // every step reads the input projection; DenseNet's concatenations) decomposes into parallel
  // parts nested deep whose boundaries hold many operators, and the views fixed on each multiply
  // the subproblems beyond time and memory. Past kMaxWork the DP turns coarse: a split operator
  // takes the view cheapest for itself and its fixed neighbours, and parallel branches share the
  // whole block. The mapping is still valid and costed exactly; it is a greedy choice where the
  // structure defeats the DP.
  static constexpr std::size_t kMaxWork = 100000;
  std::size_t work_ = 0;
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
