#include "unity/core/pcg/graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/tied_weights.h"
#include "unity/core/shapes/shape_inference.h"

namespace unity {
namespace {

Operator source_op(OpType type, const std::string& name, const std::vector<std::int64_t>& sizes,
                   DataType dtype) {
  Operator op{type, {}, name};
  op.attrs.set("shape", sizes);
  op.attrs.set("dtype", std::string(to_string(dtype)));
  return op;
}

}  // namespace

std::string Graph::describe(NodeId id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return fmt::format("node {}", id);
  const auto& op = it->second.op;
  if (op.name.empty()) return fmt::format("node {} ({})", id, to_string(op.type));
  return fmt::format("node {} '{}' ({})", id, op.name, to_string(op.type));
}

NodeId Graph::add(Operator op, std::vector<TensorRef> inputs) {
  const NodeId id = next_id_;
  std::vector<ParallelTensorShape> in_shapes;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& t = inputs[i];
    if (!contains(t.node) || t.index < 0 ||
        t.index >= static_cast<int>(nodes_.at(t.node).outputs.size()))
      throw GraphError(fmt::format("'{}' ({}): input {} refers to a missing tensor {}:{}", op.name,
                                   to_string(op.type), i, t.node, t.index));
    in_shapes.push_back(shape(t));
  }
  std::vector<ParallelTensorShape> out;
  try {
    out = infer_output_shapes(op, in_shapes);
  } catch (const ShapeError& e) {
    throw ShapeError(
        fmt::format("node {} '{}' ({}): {}", id, op.name, to_string(op.type), e.what()));
  }
  nodes_.emplace(id, Node{id, std::move(op), std::move(inputs), std::move(out)});
  ++next_id_;
  return id;
}

TensorRef Graph::add_input(const std::string& name, const std::vector<std::int64_t>& sizes,
                           DataType dtype) {
  return {add(source_op(OpType::Input, name, sizes, dtype), {}), 0};
}

TensorRef Graph::add_weight(const std::string& name, const std::vector<std::int64_t>& sizes,
                            DataType dtype) {
  return {add(source_op(OpType::Weight, name, sizes, dtype), {}), 0};
}

TensorRef Graph::add_constant(const std::string& name, const std::vector<std::int64_t>& sizes,
                              DataType dtype, std::shared_ptr<const TensorValues> values) {
  Operator op = source_op(OpType::Constant, name, sizes, dtype);
  op.values = std::move(values);
  return {add(std::move(op), {}), 0};
}

void Graph::insert_unchecked(NodeId id, Operator op, std::vector<TensorRef> inputs) {
  if (id < 0) throw GraphError(fmt::format("node id {} is negative", id));
  if (contains(id)) throw GraphError(fmt::format("node id {} is used twice", id));
  nodes_.emplace(id, Node{id, std::move(op), std::move(inputs), {}});
  next_id_ = std::max(next_id_, id + 1);
}

void Graph::release_ids_from(NodeId first) {
  if (nodes_.lower_bound(first) != nodes_.end())
    throw GraphError(fmt::format("cannot release ids from {}: node {} still has one", first,
                                 nodes_.lower_bound(first)->first));
  next_id_ = std::min(next_id_, first);
}

void Graph::remove(NodeId id) {
  if (!contains(id)) throw GraphError(fmt::format("cannot remove missing node {}", id));
  auto users = uses(id);
  if (!users.empty())
    throw GraphError(fmt::format("cannot remove {}: {} still reads it", describe(id),
                                 describe(users.front().node)));
  nodes_.erase(id);
}

void Graph::set_input(NodeId id, int slot, TensorRef value) {
  auto& n = mutable_node(id);
  if (slot < 0 || slot >= static_cast<int>(n.inputs.size()))
    throw GraphError(fmt::format("{} has no input slot {}", describe(id), slot));
  n.inputs[slot] = value;
}

void Graph::replace_uses(TensorRef from, TensorRef to) {
  for (auto& [id, n] : nodes_)
    for (auto& in : n.inputs)
      if (in == from) in = to;
}

const Node& Graph::node(NodeId id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) throw GraphError(fmt::format("no node with id {}", id));
  return it->second;
}

Node& Graph::mutable_node(NodeId id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) throw GraphError(fmt::format("no node with id {}", id));
  return it->second;
}

const ParallelTensorShape& Graph::shape(TensorRef t) const {
  const auto& n = node(t.node);
  if (t.index < 0 || t.index >= static_cast<int>(n.outputs.size()))
    throw GraphError(fmt::format("{} has no output {}", describe(t.node), t.index));
  return n.outputs[t.index];
}

std::vector<Use> Graph::uses(TensorRef t) const {
  std::vector<Use> out;
  for (const auto& [id, n] : nodes_)
    for (int s = 0; s < static_cast<int>(n.inputs.size()); ++s)
      if (n.inputs[s] == t) out.push_back({id, s});
  return out;
}

std::vector<Use> Graph::uses(NodeId producer) const {
  std::vector<Use> out;
  for (const auto& [id, n] : nodes_)
    for (int s = 0; s < static_cast<int>(n.inputs.size()); ++s)
      if (n.inputs[s].node == producer) out.push_back({id, s});
  return out;
}

std::vector<NodeId> Graph::topological_order() const {
  std::map<NodeId, int> pending;
  std::map<NodeId, std::vector<NodeId>> consumers;
  for (const auto& [id, n] : nodes_) {
    std::set<NodeId> distinct;
    for (const auto& in : n.inputs) {
      if (!contains(in.node))
        throw GraphError(fmt::format("{}: input refers to missing node {}", describe(id), in.node));
      distinct.insert(in.node);
    }
    pending[id] = static_cast<int>(distinct.size());
    for (NodeId p : distinct) consumers[p].push_back(id);
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (const auto& [id, count] : pending)
    if (count == 0) ready.push(id);
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (NodeId c : consumers[id])
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != nodes_.size()) {
    for (const auto& [id, count] : pending)
      if (count > 0)
        throw GraphError(fmt::format("the graph has a cycle through {}", describe(id)));
  }
  return order;
}

std::vector<TensorRef> Graph::sinks() const {
  std::set<TensorRef> used;
  for (const auto& [id, n] : nodes_)
    for (const auto& in : n.inputs) used.insert(in);
  std::vector<TensorRef> out;
  for (const auto& [id, n] : nodes_)
    for (int i = 0; i < static_cast<int>(n.outputs.size()); ++i)
      if (!used.count({id, i}) && !is_source_op(n.op.type)) out.push_back({id, i});
  return out;
}

void Graph::infer_shapes() {
  for (NodeId id : topological_order()) {
    auto& n = nodes_.at(id);
    const auto& info = op_info(n.op.type);
    const int arity = static_cast<int>(n.inputs.size());
    if (arity < info.min_inputs || arity > info.max_inputs)
      throw GraphError(fmt::format(
          "{} has {} inputs, expected {}", describe(id), arity,
          info.min_inputs == info.max_inputs
              ? std::to_string(info.min_inputs)
              : fmt::format("{} to {}", info.min_inputs, std::min(info.max_inputs, 1 << 10))));
    std::vector<ParallelTensorShape> in_shapes;
    for (const auto& t : n.inputs) in_shapes.push_back(shape(t));
    try {
      n.outputs = infer_output_shapes(n.op, in_shapes);
    } catch (const ShapeError& e) {
      throw ShapeError(fmt::format("{}: {}", describe(id), e.what()));
    }
  }
}

void Graph::validate() const {
  Graph copy = *this;
  copy.infer_shapes();
  for (const auto& [id, n] : nodes_) {
    const auto& expected = copy.nodes_.at(id).outputs;
    if (n.outputs != expected) {
      std::string stored = n.outputs.empty() ? "none" : n.outputs.front().to_string();
      throw GraphError(fmt::format("{}: stored output shape {} differs from the inferred {}",
                                   describe(id), stored, expected.front().to_string()));
    }
  }
}

std::int64_t Graph::count(OpType type) const {
  return std::count_if(nodes_.begin(), nodes_.end(),
                       [type](const auto& kv) { return kv.second.op.type == type; });
}

// A tied weight's table is its partner's (tied_weights.h): counted once.
std::int64_t Graph::parameter_count() const {
  const std::set<NodeId> tied = tied_copies(*this);
  std::int64_t n = 0;
  for (const auto& [id, node] : nodes_)
    if (node.op.type == OpType::Weight && !tied.count(id)) n += node.outputs.at(0).num_elements();
  return n;
}

std::int64_t Graph::active_parameter_count() const {
  std::int64_t inactive = 0;
  for (const auto& [id, node] : nodes_) {
    if (node.op.type != OpType::Experts) continue;
    const std::int64_t top_k = node.op.attrs.get_int("top_k");
    for (std::size_t slot = 2; slot < node.inputs.size(); ++slot) {
      const ParallelTensorShape& w = shape(node.inputs[slot]);
      const std::int64_t experts = w.dims.at(0).size;
      inactive += w.num_elements() / experts * (experts - top_k);
    }
  }
  return parameter_count() - inactive;
}

std::int64_t Graph::weight_bytes() const {
  const std::set<NodeId> tied = tied_copies(*this);
  std::int64_t n = 0;
  for (const auto& [id, node] : nodes_)
    if (node.op.type == OpType::Weight && !tied.count(id)) n += node.outputs.at(0).bytes();
  return n;
}

}  // namespace unity
