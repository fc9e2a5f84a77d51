// lower_plan: placement, replica meaning, tasks and the fragments that serve their requests.
#include <algorithm>
#include <set>

#include "lowering_internal.h"
#include "program_passes.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/pcg/training_loss.h"

namespace unity::executor {
namespace {

using detail::fail_at;

void check_dtype(const Graph& g, const Node& n) {
  for (const auto& s : n.outputs)
    if (s.dtype == DataType::Float16 || s.dtype == DataType::BFloat16)
      fail_at(g, n.id, "{} tensors are not supported by the executor (it trains in float32)",
              to_string(s.dtype));
}

std::vector<int> piece_ranks(const Graph& g, const Node& n,
                             const std::map<NodeId, MachineView>& views, int ranks) {
  auto it = views.find(n.id);
  if (it == views.end()) fail_at(g, n.id, "has no machine view in the plan");
  const MachineView& v = it->second;
  const auto& out = n.outputs.at(0);
  if (v.extents != task_extents(out))
    fail_at(g, n.id, "its machine view ({}) does not match its task grid of {} tasks (output {})",
            v.to_string(), out.num_pieces(), out.to_string());
  std::vector<int> owner(static_cast<std::size_t>(out.num_pieces()));
  for (int t = 0; t < static_cast<int>(owner.size()); ++t) {
    const int device = v.device(t);
    if (device < 0)
      fail_at(g, n.id, "its machine view ({}) names device {}", v.to_string(), device);
    owner[t] = device % ranks;
  }
  return owner;
}

// The pieces serving a request, choosing among copies the one on the task's rank when there is one.
std::vector<Fragment> resolve(const TensorInfo& t, const Request& req, int task_rank) {
  if (t.origin != TensorOrigin::Placed) return {{-1, task_rank, req.region}};
  const auto& s = t.shape;
  std::vector<int> lo(s.rank()), hi(s.rank());
  for (int d = 0; d < s.rank(); ++d) {
    const std::int64_t step = s.dims[d].size / s.dims[d].degree;
    lo[d] = static_cast<int>(req.region.begin[d] / step);
    hi[d] = static_cast<int>((req.region.end[d] - 1) / step);
  }
  const int key = t.layout.partial_key(req.replica);
  std::vector<Fragment> out;
  std::vector<int> block = lo;
  while (true) {
    PieceIndex p{block, req.replica};
    int chosen = piece_linear(s, p);
    if (t.piece_rank[chosen] != task_rank) {
      for (int r = 0; r < s.replica; ++r) {
        if (t.layout.partial_key(r) != key) continue;
        const int candidate = piece_linear(s, {block, r});
        if (t.piece_rank[candidate] == task_rank) {
          chosen = candidate;
          break;
        }
      }
    }
    const auto overlap = intersect(req.region, piece_region(s, block));
    if (overlap) out.push_back({chosen, t.piece_rank[chosen], *overlap});
    int d = s.rank() - 1;
    while (d >= 0 && ++block[d] > hi[d]) {
      block[d] = lo[d];
      --d;
    }
    if (d < 0) break;
  }
  return out;
}

void check_request(const Graph& g, const Node& n, const TensorInfo& t, const Request& r) {
  if (!full_region(t.shape.sizes()).contains(r.region) || r.region.num_elements() <= 0)
    fail_at(g, n.id, "internal: request {} outside input {}", r.region.to_string(),
            t.shape.to_string());
  if (r.replica < 0 || r.replica >= t.shape.replica)
    fail_at(g, n.id, "internal: replica {} of input {} with {} replicas", r.replica, r.slot,
            t.shape.replica);
}

}  // namespace

const Step* Program::step_of(NodeId node) const {
  for (const auto& s : steps)
    if (s.node == node) return &s;
  return nullptr;
}

std::map<NodeId, MachineView> single_device_views(const Graph& graph) {
  std::map<NodeId, MachineView> views;
  const PlacementGraph placement(graph);
  for (NodeId id : placement.placed()) {
    MachineView v;
    v.extents = task_extents(graph.node(id).outputs.at(0));
    v.strides.assign(v.extents.size(), 0);
    views[id] = v;
  }
  return views;
}

Program lower_plan(const Graph& pcg, const std::map<NodeId, MachineView>& views, int ranks,
                   const LoweringOptions& options) {
  if (ranks < 1) throw LoweringError("at least one rank is needed");
  Program p;
  p.graph = pcg;
  p.ranks = ranks;
  const Graph& g = p.graph;
  g.validate();
  const PlacementGraph placement(g);

  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    check_dtype(g, n);
    std::vector<ReplicaLayout> in_layouts;
    bool grad = false;
    for (const auto& in : n.inputs) {
      const TensorInfo& t = p.tensors.at(in);
      in_layouts.push_back(t.layout);
      grad = grad || t.requires_grad;
    }
    std::vector<ReplicaLayout> layouts;
    try {
      layouts = replica_output_layouts(g, n, in_layouts);
    } catch (const ReplicaMeaningError& e) {
      throw LoweringError(e.what());
    }
    const bool placed = placement.is_placed(id);
    std::vector<int> owners;
    if (placed) owners = piece_ranks(g, n, views, ranks);
    for (int o = 0; o < static_cast<int>(n.outputs.size()); ++o) {
      TensorInfo t;
      t.ref = {id, o};
      t.shape = n.outputs[o];
      t.layout = layouts[o];
      if (t.layout.size() != t.shape.replica)
        fail_at(g, id, "internal: replica layout {} for {} replicas", t.layout.to_string(),
                t.shape.replica);
      if (placed) {
        t.origin = TensorOrigin::Placed;
        t.piece_rank = owners;
        t.requires_grad = grad && is_floating(t.shape.dtype);
      } else {
        t.root = placement.source_root(id);
        const OpType root = g.node(t.root).op.type;
        t.origin = root == OpType::Weight     ? TensorOrigin::Weight
                   : root == OpType::Constant ? TensorOrigin::Constant
                                              : TensorOrigin::Input;
        t.requires_grad =
            (t.origin == TensorOrigin::Weight || options.inputs_with_gradients.count(t.root) > 0) &&
            is_floating(t.shape.dtype);
      }
      p.tensors[t.ref] = t;
    }
    if (!placed) continue;

    Step step;
    step.node = id;
    const int tasks = static_cast<int>(n.outputs.at(0).num_pieces());
    for (int i = 0; i < tasks; ++i) {
      Task task;
      task.index = i;
      task.rank = owners[i];
      task.inputs = detail::task_requests(g, n, i);
      for (const auto& r : task.inputs) {
        const TensorInfo& t = p.tensors.at(r.tensor);
        check_request(g, n, t, r);
        task.fragments.push_back(resolve(t, r, task.rank));
      }
      step.tasks.push_back(std::move(task));
    }
    p.steps.push_back(std::move(step));
  }

  for (const auto& sink : g.sinks()) {
    const bool objective = options.train_all_outputs || is_objective(g, sink);
    if (objective && is_floating(g.shape(sink).dtype) && placement.is_placed(sink.node))
      p.losses.push_back(sink);
    else
      p.outputs.push_back(sink);
  }
  if (options.require_loss && p.losses.empty())
    throw LoweringError(
        "nothing to train: no output of the graph derives from a loss operator "
        "(SoftmaxCrossEntropy or MSELoss) or is a 0-d loss of the model's own");

  detail::collect_weight_shards(p);
  detail::plan_gradient_syncs(p);
  detail::plan_statistics_groups(p);
  detail::plan_collectives(p);
  return p;
}

}  // namespace unity::executor
