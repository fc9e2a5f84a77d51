#pragma once
// The Parallel Computation Graph. Nodes have stable ids (never reused), inputs and weights are
// nodes, and every output carries its inferred ParallelTensorShape.
#include <algorithm>
#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity {

using NodeId = std::int64_t;

struct TensorRef {
  NodeId node = -1;
  int index = 0;  // which output of the node
  auto operator<=>(const TensorRef&) const = default;
};

struct Node {
  NodeId id = -1;
  Operator op;
  std::vector<TensorRef> inputs;
  std::vector<ParallelTensorShape> outputs;

  TensorRef output(int index = 0) const { return {id, index}; }
};

struct Use {
  NodeId node;  // the consumer
  int slot;     // which of its inputs
  auto operator<=>(const Use&) const = default;
};

class Graph {
 public:
  std::string name;
  std::int64_t batch_size = 0;  // batch its inputs hold (0: unknown); a zoo model built for N
                                // devices holds N times the per-device batch
  // What the model's source says that its operators do not hold (a Hugging Face config's rope
  // settings, biases and norms: model_shape.h's hf_source_details), as JSON text; empty: none.
  // Kept with the graph for the launch writers; shapes, costs and the executor never read it.
  std::string source_details;

  // Adds a node and infers its output shapes; throws ShapeError naming the node when they are
  // invalid.
  NodeId add(Operator op, std::vector<TensorRef> inputs);
  TensorRef add_input(const std::string& name, const std::vector<std::int64_t>& sizes,
                      DataType dtype = DataType::Float32);
  TensorRef add_weight(const std::string& name, const std::vector<std::int64_t>& sizes,
                       DataType dtype = DataType::Float32);
  // A tensor with fixed values that is not trained (integer values for an integer dtype).
  TensorRef add_constant(const std::string& name, const std::vector<std::int64_t>& sizes,
                         DataType dtype, std::shared_ptr<const TensorValues> values);
  // Inserts a node with a given id (for loading files); shapes are inferred later by
  // infer_shapes().
  void insert_unchecked(NodeId id, Operator op, std::vector<TensorRef> inputs);

  void remove(NodeId id);  // the node must have no consumers
  void set_input(NodeId id, int slot, TensorRef value);
  // Every use of `from` now reads `to` instead.
  void replace_uses(TensorRef from, TensorRef to);

  bool contains(NodeId id) const { return nodes_.count(id) != 0; }
  const Node& node(NodeId id) const;
  Node& mutable_node(NodeId id);
  const std::map<NodeId, Node>& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  const ParallelTensorShape& shape(TensorRef t) const;
  NodeId next_id() const { return next_id_; }
  // Ids handed out from now on are at least `next` (so pieces cut from a graph can grow without
  // clashing with the ids of the rest).
  void reserve_ids(NodeId next) { next_id_ = std::max(next_id_, next); }
  // Gives ids from `first` on back after the nodes that had them were removed (none may be left).
  void release_ids_from(NodeId first);

  std::vector<Use> uses(TensorRef t) const;
  std::vector<Use> uses(NodeId id) const;  // of any output
  // Kahn's order; ties broken by id so the order is deterministic. Throws GraphError on a cycle.
  std::vector<NodeId> topological_order() const;
  // Outputs nobody consumes (the model's results and losses).
  std::vector<TensorRef> sinks() const;

  // Recomputes every output shape in topological order; throws ShapeError naming the first bad
  // node.
  void infer_shapes();
  // Checks arity, dangling inputs, cycles, and that stored shapes equal re-inferred ones.
  void validate() const;
  // Equal for graphs equal up to node ids and names; differs after any change of op, attribute,
  // shape, degree or wiring.
  std::uint64_t structural_hash() const;

  std::int64_t count(OpType type) const;
  std::int64_t parameter_count() const;  // elements of all Weight nodes
  // The parameters one token runs through: an Experts operator's weights count top_k of its E
  // experts (what mixture-of-experts models publish as "active"); equal to parameter_count()
  // without experts.
  std::int64_t active_parameter_count() const;
  std::int64_t weight_bytes() const;

  std::string describe(NodeId id) const;  // "node 12 'fc1' (Linear)" for messages

 private:
  std::map<NodeId, Node> nodes_;
  NodeId next_id_ = 0;
};

}  // namespace unity
