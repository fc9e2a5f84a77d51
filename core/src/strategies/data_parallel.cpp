#include "unity/core/strategies/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "unity/core/errors.h"

namespace unity {
namespace {

std::int64_t batch_of(const Graph& serial) {
  if (serial.batch_size > 0) return serial.batch_size;
  for (const auto& [id, n] : serial.nodes())
    if (n.op.type == OpType::Input && !n.outputs.empty() && n.outputs[0].rank() > 0)
      return n.outputs[0].dims[0].size;
  return 0;
}

// Nodes whose output derives from a batched input.
std::set<NodeId> batch_derived(const Graph& g, const std::set<NodeId>& batched_sources) {
  std::set<NodeId> derived = batched_sources;
  for (const NodeId id : g.topological_order())
    for (const auto& in : g.node(id).inputs)
      if (derived.count(in.node)) {
        derived.insert(id);
        break;
      }
  return derived;
}

// An Expand that makes the batch dim out of a parameter (ViT's class token, one per image): it runs
// once, serially, and its output is partitioned like the batch; the parameters it reads are not
// replicated for it.
bool expands_to_batch(const Graph& g, const Node& n, std::int64_t batch) {
  if (n.op.type != OpType::Expand) return false;
  const auto& y = n.outputs.at(0);
  const auto& x = g.shape(n.inputs.at(0));
  return y.rank() > 0 && y.dims[0].size == batch && (x.rank() < y.rank() || x.dims[0].size == 1);
}

// Puts `op` after `t` for every reader outside `serial_region`.
void insert_after(Graph& g, TensorRef t, const Operator& op,
                  const std::set<NodeId>& serial_region) {
  std::vector<Use> users;
  for (const auto& u : g.uses(t))
    if (!serial_region.count(u.node)) users.push_back(u);
  if (users.empty()) return;
  const NodeId par = g.add(op, {t});
  for (const auto& u : users) g.set_input(u.node, u.slot, {par, 0});
}

}  // namespace

Graph make_data_parallel(const Graph& serial, int degree) {
  return make_data_parallel(serial, degree, {});
}

Graph make_data_parallel(const Graph& serial, int degree, const std::set<NodeId>& also_batched) {
  if (degree < 1)
    throw InputError(fmt::format("data parallelism needs at least 1 device, got {}", degree));
  Graph g = serial;
  if (degree == 1) return g;
  const std::int64_t batch = batch_of(serial);
  auto partition = [&](const std::string& name) {
    return Operator{OpType::Partition,
                    {{"dim", std::int64_t{0}}, {"degree", std::int64_t{degree}}},
                    name + ".partition"};
  };
  auto replicate = [&](const std::string& name) {
    return Operator{OpType::Replicate, {{"degree", std::int64_t{degree}}}, name + ".replicate"};
  };

  // Partitions `out` (node n's batch-sized output) for its readers outside the serial region.
  std::set<NodeId> serial_region;
  auto partition_batch = [&](TensorRef out, const Node& n) {
    if (n.outputs[0].dims[0].size % degree != 0)
      throw InputError(fmt::format("batch {} of '{}' is not divisible by {} devices",
                                   n.outputs[0].dims[0].size, n.op.name, degree));
    insert_after(g, out, partition(n.op.name), serial_region);
  };

  std::set<NodeId> batched_sources;
  for (const auto& [id, n] : serial.nodes()) {
    const auto& s = n.outputs.empty() ? ParallelTensorShape{} : n.outputs[0];
    if (n.op.type == OpType::Input && s.rank() > 0 &&
        (s.dims[0].size == batch || also_batched.count(id)))
      batched_sources.insert(id);
  }
  const std::set<NodeId> derived = batch_derived(serial, batched_sources);

  // The serial region: batch-making Expands and everything (not batch-derived) they read.
  std::set<NodeId> expands;
  for (const auto& [id, n] : serial.nodes())
    if (!derived.count(id) && expands_to_batch(serial, n, batch)) expands.insert(id);
  std::vector<NodeId> todo(expands.begin(), expands.end());
  while (!todo.empty()) {
    const NodeId id = todo.back();
    todo.pop_back();
    if (!serial_region.insert(id).second) continue;
    for (const auto& in : serial.node(id).inputs) todo.push_back(in.node);
  }

  for (const auto& [id, n] : serial.nodes()) {
    const TensorRef out{id, 0};
    if (is_source_op(n.op.type)) {
      if (batched_sources.count(id)) {
        partition_batch(out, n);
      } else {
        insert_after(g, out, replicate(n.op.name), serial_region);
      }
    } else if (expands.count(id)) {
      partition_batch(out, n);
    } else if (serial_region.count(id)) {
      // Computed from parameters for the Expand and also read by the replicated graph.
      insert_after(g, out, replicate(n.op.name), serial_region);
    }
  }
  try {
    g.infer_shapes();
    sum_partial_reductions(g);
  } catch (const ShapeError& e) {
    throw InputError(fmt::format("'{}' cannot be trained data-parallel on {} devices: {}",
                                 serial.name, degree, e.what()));
  }
  return g;
}

void sum_partial_reductions(Graph& g) {
  for (const NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    const OpType type = n.op.type;
    if (n.outputs.empty() || is_source_op(type) || is_parallel_op(type)) continue;
    if (type == OpType::SoftmaxCrossEntropy || type == OpType::MSELoss) continue;
    int widest = 1;
    for (const auto& in : n.inputs) widest = std::max(widest, g.shape(in).replica);
    const int replica = n.outputs[0].replica;
    if (replica <= widest || replica % widest != 0) continue;
    const TensorRef out{id, 0};
    const auto users = g.uses(out);
    if (users.empty()) continue;
    Operator sum{
        OpType::AllReduce, {{"degree", std::int64_t{replica / widest}}}, n.op.name + ".allreduce"};
    const NodeId summed = g.add(std::move(sum), {out});
    for (const auto& u : users) g.set_input(u.node, u.slot, {summed, 0});
  }
  // No shape to infer again: an AllReduce's output has its input's shape (copies instead of
  // partial sums), so every reader's inputs are as they were.
}

}  // namespace unity
