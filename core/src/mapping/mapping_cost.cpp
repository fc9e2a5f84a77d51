#include "unity/core/mapping/mapping_cost.h"

#include <algorithm>
#include <set>

#include "unity/core/pcg/tied_weights.h"
#include "unity/core/shapes/concat_pieces.h"

namespace unity {
namespace {

// Degrees of every dim, then the replica degree: the grid a tensor's pieces are indexed in
// (row-major, which is also how MachineView numbers tasks).
std::vector<int> piece_grid(const ParallelTensorShape& s) {
  std::vector<int> g;
  for (const auto& d : s.dims) g.push_back(d.degree);
  g.push_back(s.replica);
  return g;
}

std::vector<int> unlinear(int index, const std::vector<int>& grid) {
  std::vector<int> idx(grid.size());
  for (int i = static_cast<int>(grid.size()) - 1; i >= 0; --i) {
    idx[i] = index % grid[i];
    index /= grid[i];
  }
  return idx;
}

int linear(const std::vector<int>& idx, const std::vector<int>& grid) {
  int index = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) index = index * grid[i] + idx[i];
  return index;
}

bool aliases_input(OpType t) {
  return t == OpType::Reshape || t == OpType::Flatten || t == OpType::Identity;
}

}  // namespace

MappingCost::MappingCost(const Graph& graph, const CostModel& model)
    : graph_(graph), model_(model), placement_(graph) {
  for (NodeId id : placement_.placed()) extents_[id] = task_extents(graph.node(id).outputs.at(0));
  // A tied table whose two readers hold the same pieces (both whole, or both split alike) is one
  // tensor on each device: its copy adds no memory, update or synchronisation of its own.
  auto piece_read = [&](NodeId weight) -> std::int64_t {
    for (NodeId id : placement_.placed())
      for (const auto& in : graph.node(id).inputs)
        if (!placement_.is_placed(in.node) && placement_.source_root(in.node) == weight)
          return graph.shape(in).piece_elements();
    return -1;
  };
  for (NodeId w : tied_copies(graph)) {
    const std::int64_t piece = piece_read(w);
    if (piece > 0 && piece == piece_read(*tied_partner(graph, w))) shared_tied_.insert(w);
  }
}

CostBreakdown MappingCost::node_cost(NodeId id, const MachineView& view) const {
  CostBreakdown c;
  const Node& n = graph_.node(id);
  if (is_parallel_op(n.op.type)) return c;
  const auto& machine = model_.machine();
  const int tasks = view.num_tasks();
  std::set<int> devices;
  for (int t = 0; t < tasks; ++t) devices.insert(view.device(t));
  // Tasks run on distinct devices at the same time; with mixed device types the slowest decides.
  std::set<const DeviceSpec*> types;
  for (int d : devices) types.insert(&machine.device(d));
  const OpTimes times = op_times(id, view);
  c.compute = times.forward + times.backward;
  if (!model_.counts_weight_updates()) return c;
  for (const auto& in : n.inputs) {
    if (placement_.is_placed(in.node)) continue;
    if (graph_.node(placement_.source_root(in.node)).op.type != OpType::Weight) continue;
    if (shared_tied_.count(placement_.source_root(in.node))) continue;
    const auto& w = graph_.shape(in);
    const double piece = static_cast<double>(w.piece_bytes());
    double update = 0;
    for (const DeviceSpec* type : types)
      update = std::max(update, model_.update_time(piece, *type));
    c.compute += update;
    if (w.replica <= 1) continue;
    // Copies of one weight piece are the pieces that differ only in their replica index, which is
    // the fastest-varying index; their gradients are summed with an all-reduce among the devices
    // holding them. Different pieces synchronise at the same time.
    const int pieces = static_cast<int>(w.num_pieces());
    const int groups = pieces / w.replica;
    double slowest = 0;
    for (int g = 0; g < groups; ++g) {
      std::vector<int> group;
      for (int r = 0; r < w.replica; ++r) group.push_back(view.device((g * w.replica + r) % tasks));
      slowest = std::max(slowest, model_.allreduce_time(group, piece));
      c.bytes += CostModel::allreduce_bytes(w.replica, piece);
    }
    c.communication += slowest;
  }
  return c;
}

CostBreakdown MappingCost::piecewise_edge(const ParallelTensorShape& tensor, const MachineView& pv,
                                          const MachineView& cv) const {
  CostBreakdown c;
  const int pieces = pv.num_tasks();
  const double bytes = static_cast<double>(tensor.piece_bytes());
  std::vector<Transfer> moves;
  for (int t = 0; t < cv.num_tasks(); ++t) {
    const int src = pv.device(t % pieces), dst = cv.device(t);
    if (src != dst) moves.push_back({src, dst, bytes});
  }
  if (moves.empty()) return c;
  // Forward moves the activation, backward moves its gradient back the same way.
  c.communication = 2 * model_.transfers_time(moves);
  for (const auto& m : moves) c.bytes += 2 * m.bytes;
  return c;
}

CostBreakdown MappingCost::parallel_edge(NodeId producer, int index, const MachineView& pv,
                                         NodeId consumer, const MachineView& cv) const {
  const Node& n = graph_.node(consumer);
  const auto& in = graph_.node(producer).outputs.at(index);
  const auto& out = n.outputs.at(0);
  const auto gin = piece_grid(in), gout = piece_grid(out);
  const double in_bytes = static_cast<double>(in.piece_bytes());
  const double out_bytes = static_cast<double>(out.piece_bytes());
  const int last = static_cast<int>(gout.size()) - 1;
  const int k = static_cast<int>(n.op.attrs.get_int("degree", 1));
  const int pin = pv.num_tasks(), pout = cv.num_tasks();
  std::vector<Transfer> moves;
  auto move = [&](int i, int j, double bytes) {
    const int src = pv.device(i % pin), dst = cv.device(j % pout);
    if (src != dst) moves.push_back({src, dst, bytes});
  };
  CostBreakdown c;
  switch (n.op.type) {
    case OpType::Partition:
    case OpType::Replicate: {
      // Each output piece is a slice or a copy of one input piece.
      const int dim = n.op.type == OpType::Replicate
                          ? last
                          : in.axis(static_cast<int>(n.op.attrs.get_int("dim")));
      for (int j = 0; j < pout; ++j) {
        auto idx = unlinear(j, gout);
        idx[dim] /= k;
        move(linear(idx, gin), j, out_bytes);
      }
      break;
    }
    case OpType::Reduce: {
      // Each output piece sums k partial pieces of its whole size. NCCL reduces into a root
      // through a ring (a reduce-scatter, then the root gathers the reduced shares), so the
      // slowest link carries the buffer as often as in an all-reduce of the group, not k - 1
      // times into the root; the backward broadcasts the gradient back the same way.
      double slowest = 0;
      for (int j = 0; j < pout; ++j) {
        const auto idx = unlinear(j, gout);
        const int root = cv.device(j % pout);
        std::vector<int> group{root};
        for (int ch = 0; ch < k; ++ch) {
          auto child = idx;
          child[last] = idx[last] * k + ch;
          const int src = pv.device(linear(child, gin) % pin);
          if (src == root) continue;
          c.bytes += 2 * in_bytes;
          if (std::find(group.begin(), group.end(), src) == group.end()) group.push_back(src);
        }
        slowest = std::max(slowest, model_.allreduce_time(group, in_bytes));
      }
      c.communication += 2 * slowest;
      break;
    }
    case OpType::Combine: {
      // Each output piece gathers k input pieces.
      const int dim = in.axis(static_cast<int>(n.op.attrs.get_int("dim")));
      for (int j = 0; j < pout; ++j) {
        auto idx = unlinear(j, gout);
        for (int ch = 0; ch < k; ++ch) {
          auto child = idx;
          child[dim] = idx[dim] * k + ch;
          move(linear(child, gin), j, in_bytes);
        }
      }
      break;
    }
    case OpType::AllReduce: {
      // Groups of k consecutive replicas sum and share their pieces; pieces that change device on
      // the way move first.
      double slowest = 0;
      for (int g = 0; g < pout / k; ++g) {
        std::vector<int> group;
        for (int r = 0; r < k; ++r) {
          const int j = g * k + r;
          move(j, j, in_bytes);
          group.push_back(cv.device(j));
        }
        slowest = std::max(slowest, model_.allreduce_time(group, out_bytes));
        c.bytes += 2 * CostModel::allreduce_bytes(k, out_bytes);  // forward and backward
      }
      c.communication += 2 * slowest;
      break;
    }
    default:  // Pipeline, Batch: piece i stays piece i
      for (int j = 0; j < pout; ++j) move(j, j, out_bytes);
      break;
  }
  if (!moves.empty()) {
    c.communication += 2 * model_.transfers_time(moves);
    for (const auto& m : moves) c.bytes += 2 * m.bytes;
  }
  return c;
}

CostBreakdown MappingCost::edge_cost(NodeId producer, const MachineView& pv, NodeId consumer,
                                     const MachineView& cv) const {
  CostBreakdown c;
  const Node& n = graph_.node(consumer);
  const bool concat_pieces = n.op.type == OpType::Concat && n.op.attrs.get_int("pieces", 1) > 1;
  for (int slot = 0; slot < static_cast<int>(n.inputs.size()); ++slot) {
    const auto& in = n.inputs[slot];
    if (in.node != producer) continue;
    if (is_parallel_op(n.op.type))
      c += parallel_edge(producer, in.index, pv, consumer, cv);
    else if (concat_pieces)
      c += concat_piece_edge(consumer, slot, pv, cv);
    else
      c += piecewise_edge(graph_.shape(in), pv, cv);
  }
  return c;
}

CostBreakdown MappingCost::concat_piece_edge(NodeId consumer, int slot, const MachineView& pv,
                                             const MachineView& cv) const {
  const Node& n = graph_.node(consumer);
  const auto& out = n.outputs.at(0);
  const auto& tensor = graph_.shape(n.inputs[slot]);
  const int axis = out.axis(static_cast<int>(n.op.attrs.get_int("axis")));
  std::vector<std::int64_t> sizes;
  for (const auto& in : n.inputs) sizes.push_back(graph_.shape(in).dims[axis].size);
  const int block = concat_input_pieces(sizes, out.dims[axis].degree)[slot];
  const auto gout = piece_grid(out), gin = piece_grid(tensor);
  const int pieces = pv.num_tasks();
  const double bytes = static_cast<double>(tensor.piece_bytes());
  std::vector<Transfer> moves;
  for (int t = 0; t < cv.num_tasks(); ++t) {
    auto idx = unlinear(t, gout);
    if (idx[axis] != block) continue;
    idx[axis] = 0;
    const int src = pv.device(linear(idx, gin) % pieces), dst = cv.device(t);
    if (src != dst) moves.push_back({src, dst, bytes});
  }
  CostBreakdown c;
  if (moves.empty()) return c;
  c.communication = 2 * model_.transfers_time(moves);
  for (const auto& m : moves) c.bytes += 2 * m.bytes;
  return c;
}

double MappingCost::memory_upper_bound() const {
  double total = 0;
  const MachineView one{0, {}, {}};
  for (NodeId id : placement_.placed()) {
    std::vector<double> mem(1, 0.0);
    add_node_memory(id, one, mem);
    total += mem[0];
  }
  return total;
}

void MappingCost::add_node_memory(NodeId id, const MachineView& view,
                                  std::vector<double>& mem) const {
  const Node& n = graph_.node(id);
  // Per byte of a weight: itself, its gradient (fp32 for bf16, gradient_bytes) and the
  // optimizer's fp32 state, plus an fp32 master copy when it is a mixed-precision (2-byte) weight:
  // fp32 2 + k, fp16 (2 + 2 + 4 + 4k) / 2, bf16 (2 + 4 + 4 + 4k) / 2.
  auto weight_copies = [&](const ParallelTensorShape& w) {
    const double size = static_cast<double>(size_of(w.dtype));
    const double master = size < 4 ? 4.0 : 0.0;
    return (size + gradient_bytes(w.dtype) + master +
            4.0 * optimizer_state_copies(model_.optimizer())) /
           size;
  };
  const int tasks = view.num_tasks();
  auto add = [&](int t, double bytes) {
    const int d = view.device(t);
    if (d >= 0 && d < static_cast<int>(mem.size())) mem[d] += bytes;
  };
  if (!aliases_input(n.op.type))
    for (const auto& o : n.outputs)
      for (int t = 0; t < tasks; ++t) add(t, static_cast<double>(o.piece_bytes()));
  for (const auto& in : n.inputs) {
    if (placement_.is_placed(in.node)) continue;
    if (shared_tied_.count(placement_.source_root(in.node))) continue;
    const bool weight = graph_.node(placement_.source_root(in.node)).op.type == OpType::Weight;
    const double piece = static_cast<double>(graph_.shape(in).piece_bytes());
    const double copies = weight ? weight_copies(graph_.shape(in)) : 1.0;
    for (int t = 0; t < tasks; ++t) add(t, piece * copies);
  }
}

std::vector<double> MappingCost::memory_per_device(
    const std::map<NodeId, MachineView>& views) const {
  std::vector<double> mem(model_.machine().num_devices(), 0.0);
  for (const auto& [id, view] : views) add_node_memory(id, view, mem);
  return mem;
}

OpTimes MappingCost::op_times(NodeId id, const MachineView& view) const {
  OpTimes worst;
  if (is_parallel_op(graph_.node(id).op.type)) return worst;
  std::set<const DeviceSpec*> types;
  for (int d : view.devices()) types.insert(&model_.machine().device(d));
  for (const DeviceSpec* type : types) {
    const OpTimes t = model_.task_times(graph_, id, *type);
    worst.forward = std::max(worst.forward, t.forward);
    worst.backward = std::max(worst.backward, t.backward);
  }
  return worst;
}

}  // namespace unity
