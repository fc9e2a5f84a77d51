#include "program_passes.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace unity::executor::detail {
namespace {

// Every cell of the grid cut at `cuts` (per dim, sorted), row-major.
std::vector<Region> grid_cells(const std::vector<std::vector<std::int64_t>>& cuts) {
  std::vector<Region> cells;
  const int rank = static_cast<int>(cuts.size());
  std::vector<std::size_t> at(rank, 0);
  for (int d = 0; d < rank; ++d)
    if (cuts[d].size() < 2) return cells;
  while (true) {
    Region r;
    for (int d = 0; d < rank; ++d) {
      r.begin.push_back(cuts[d][at[d]]);
      r.end.push_back(cuts[d][at[d] + 1]);
    }
    cells.push_back(std::move(r));
    int d = rank - 1;
    while (d >= 0 && ++at[d] + 1 >= cuts[d].size()) {
      at[d] = 0;
      --d;
    }
    if (d < 0) break;
  }
  return cells;
}

}  // namespace

void collect_weight_shards(Program& p) {
  std::set<std::tuple<NodeId, int, std::vector<std::int64_t>, std::vector<std::int64_t>>> seen;
  for (const auto& step : p.steps)
    for (const auto& task : step.tasks)
      for (const auto& req : task.inputs) {
        const TensorInfo& t = p.tensor(req.tensor);
        if (t.origin != TensorOrigin::Weight) continue;
        if (seen.insert({t.root, task.rank, req.region.begin, req.region.end}).second)
          p.shards.push_back({t.root, task.rank, req.region});
      }
}

void plan_gradient_syncs(Program& p) {
  std::map<NodeId, std::vector<const WeightShard*>> by_root;
  for (const auto& s : p.shards) by_root[s.root].push_back(&s);
  for (const auto& [root, shards] : by_root) {
    if (!is_floating(p.graph.node(root).outputs.at(0).dtype)) continue;
    const int rank = shards.front()->region.rank();
    std::vector<std::vector<std::int64_t>> cuts(rank);
    for (const auto* s : shards)
      for (int d = 0; d < rank; ++d) {
        cuts[d].push_back(s->region.begin[d]);
        cuts[d].push_back(s->region.end[d]);
      }
    for (auto& c : cuts) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    std::map<std::vector<int>, std::vector<Region>> groups;
    for (auto& cell : grid_cells(cuts)) {
      std::set<int> holders;
      for (const auto* s : shards)
        if (s->region.contains(cell)) holders.insert(s->rank);
      if (holders.size() < 2) continue;
      groups[std::vector<int>(holders.begin(), holders.end())].push_back(std::move(cell));
    }
    for (auto& [ranks, cells] : groups) p.gradient_syncs.push_back({root, ranks, std::move(cells)});
  }
}

void plan_statistics_groups(Program& p) {
  for (auto& step : p.steps) {
    const Node& n = p.graph.node(step.node);
    if (n.op.type != OpType::BatchNorm) continue;
    const auto& out = n.outputs.at(0);
    if (out.dims[0].degree == 1) continue;
    std::map<std::pair<int, int>, std::vector<int>> groups;  // (channel block, replica) -> tasks
    for (const auto& task : step.tasks) {
      const PieceIndex pi = piece_index(out, task.index);
      groups[{pi.block[1], pi.replica}].push_back(task.index);
    }
    for (auto& [key, tasks] : groups) step.statistics_groups.push_back(std::move(tasks));
  }
}

namespace {

bool distinct(const std::vector<int>& v) {
  std::set<int> s(v.begin(), v.end());
  return s.size() == v.size();
}

void plan_all_reduce(Program& p, Step& step) {
  const Node& n = p.graph.node(step.node);
  const TensorInfo& in = p.tensor(n.inputs[0]);
  const TensorInfo& out = p.tensor({n.id, 0});
  if (in.origin != TensorOrigin::Placed) return;
  const int k = static_cast<int>(n.op.attrs.get_int("degree"));
  const int pieces = static_cast<int>(out.shape.num_pieces());
  std::vector<std::vector<int>> groups;
  for (int base = 0; base < pieces; base += k) {
    std::vector<int> ranks;
    for (int j = base; j < base + k; ++j) {
      if (in.piece_rank[j] != out.piece_rank[j]) return;
      ranks.push_back(out.piece_rank[j]);
    }
    if (!distinct(ranks)) return;
    groups.push_back(std::move(ranks));
  }
  step.collective = Collective::AllReduce;
  step.groups = std::move(groups);
}

void plan_reduce_scatter(Program& p, Step& step) {
  const Graph& g = p.graph;
  const Node& n = g.node(step.node);
  const TensorInfo& in = p.tensor(n.inputs[0]);
  if (in.origin != TensorOrigin::Placed) return;
  const auto uses = g.uses(TensorRef{n.id, 0});
  if (uses.size() != 1) return;
  const Node& part = g.node(uses[0].node);
  const int k = static_cast<int>(n.op.attrs.get_int("degree"));
  if (part.op.type != OpType::Partition || part.op.attrs.get_int("degree") != k) return;
  const auto& mid = n.outputs.at(0);
  const int dim = mid.axis(static_cast<int>(part.op.attrs.get_int("dim")));
  const TensorInfo& out = p.tensor({part.id, 0});
  std::vector<std::vector<int>> groups;
  for (int j = 0; j < static_cast<int>(mid.num_pieces()); ++j) {
    const PieceIndex pi = piece_index(mid, j);
    std::vector<int> holders, receivers;
    for (int ch = 0; ch < k; ++ch)
      holders.push_back(in.piece_rank[piece_linear(in.shape, {pi.block, pi.replica * k + ch})]);
    for (int c = 0; c < k; ++c) {
      PieceIndex child = pi;
      child.block[dim] = pi.block[dim] * k + c;
      receivers.push_back(out.piece_rank[piece_linear(out.shape, child)]);
    }
    if (!distinct(holders)) return;
    auto sorted_h = holders, sorted_r = receivers;
    std::sort(sorted_h.begin(), sorted_h.end());
    std::sort(sorted_r.begin(), sorted_r.end());
    if (sorted_h != sorted_r) return;
    groups.push_back(std::move(receivers));
  }
  step.collective = Collective::ReduceScatter;
  step.groups = std::move(groups);
  step.fused_partition = part.id;
  for (auto& s : p.steps)
    if (s.node == part.id) s.fused_away = true;
}

}  // namespace

void plan_collectives(Program& p) {
  for (auto& step : p.steps) {
    const Node& n = p.graph.node(step.node);
    if (n.op.type == OpType::AllReduce) plan_all_reduce(p, step);
    if (n.op.type == OpType::Reduce && n.op.attrs.get_int("degree") > 1)
      plan_reduce_scatter(p, step);
  }
}

}  // namespace unity::executor::detail
