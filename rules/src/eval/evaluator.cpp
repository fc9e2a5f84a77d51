// The evaluator's entry points and the parallel operators, which move data between replicas and
// micro-batches rather than computing on it.
#include "unity/rules/evaluator.h"

#include "evaluate_internal.h"
#include "unity/core/errors.h"
#include "unity/core/shapes/shape_inference.h"

namespace unity::rules {
namespace {

using detail::undefined;

int degree_of(const Operator& op) { return static_cast<int>(op.attrs.get_int("degree")); }

// Reduce and AllReduce sum the innermost `d` replicas, which must be partial sums.
ReplicaLayout summed_layout(const ParallelValue& x, int d) {
  const auto split = x.layout.split_inner(d);
  if (!split) undefined("cannot sum groups of {} replicas out of {}", d, x.layout.to_string());
  if (split->second != ReplicaLayout::partials(d))
    undefined(
        "sums {} replicas that are {}, not partial sums (the result would be {} times too large)",
        d, split->second.to_string(), d);
  return split->first;
}

ParallelValue parallel_op(const Operator& op, const ParallelValue& x,
                          const ParallelTensorShape& shape) {
  ParallelValue y;
  y.shape = shape;
  y.layout = x.layout;
  y.stages = x.stages;
  const int d = degree_of(op);
  const int r = x.shape.replica;
  switch (op.type) {
    case OpType::Partition:
    case OpType::Combine:
      y.data = x.data;  // degrees are layout: every replica still holds the whole tensor
      return y;
    case OpType::Replicate:
      y.layout = x.layout.with_inner({d, false});
      for (int s = 0; s < x.stages; ++s)
        for (int i = 0; i < r; ++i)
          for (int c = 0; c < d; ++c) y.data.push_back(x.piece(s, i));
      return y;
    case OpType::Reduce:
    case OpType::AllReduce: {
      y.layout = summed_layout(x, d);
      if (op.type == OpType::AllReduce) y.layout = y.layout.with_inner({d, false});
      for (int s = 0; s < x.stages; ++s)
        for (int j = 0; j < r / d; ++j) {
          DenseTensor sum = x.piece(s, j * d);
          for (int c = 1; c < d; ++c) sum = add(sum, x.piece(s, j * d + c));
          for (int c = 0; c < (op.type == OpType::AllReduce ? d : 1); ++c) y.data.push_back(sum);
        }
      return y;
    }
    default:
      break;
  }
  const int axis = x.shape.axis(static_cast<int>(op.attrs.get_int("dim")));
  if (op.type == OpType::Pipeline) {
    // Micro-batch s*d+i is chunk i of micro-batch s.
    y.stages = x.stages * d;
    const std::int64_t chunk = x.shape.dims[axis].size / d;
    for (int s = 0; s < x.stages; ++s)
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < r; ++j)
          y.data.push_back(slice(x.piece(s, j), axis, i * chunk, (i + 1) * chunk));
    return y;
  }
  // Batch: micro-batches s*d .. s*d+d-1 concatenated.
  if (x.stages % d != 0)
    undefined("Batch of {} gathers {} micro-batches but the tensor arrives in {}", d, d, x.stages);
  y.stages = x.stages / d;
  for (int s = 0; s < y.stages; ++s)
    for (int j = 0; j < r; ++j) {
      std::vector<DenseTensor> parts;
      for (int i = 0; i < d; ++i) parts.push_back(x.piece(s * d + i, j));
      y.data.push_back(concat(parts, axis));
    }
  return y;
}

}  // namespace

Evaluation evaluate(const Operator& op, const std::vector<const ParallelValue*>& inputs) {
  Evaluation result;
  std::vector<ParallelTensorShape> in_shapes;
  int stages = 1;
  for (const auto* v : inputs) {
    in_shapes.push_back(v->shape);
    if (v->stages > 1) {
      if (stages > 1 && v->stages != stages) {
        result.error = fmt::format("inputs arrive in {} and {} micro-batches", stages, v->stages);
        return result;
      }
      stages = v->stages;
    }
  }
  std::vector<ParallelTensorShape> out_shapes;
  try {
    out_shapes = infer_output_shapes(op, in_shapes);
  } catch (const InputError& e) {
    result.error = e.what();
    return result;
  }
  try {
    if (is_parallel_op(op.type)) {
      result.outputs.push_back(parallel_op(op, *inputs[0], out_shapes[0]));
      return result;
    }
    if (is_source_op(op.type)) {
      result.error = "sources take their value from the caller";
      return result;
    }
    detail::OpContext c{op, inputs, out_shapes, 0};
    const auto layouts = detail::output_layouts(c);
    result.outputs.resize(out_shapes.size());
    for (std::size_t o = 0; o < out_shapes.size(); ++o) {
      result.outputs[o].shape = out_shapes[o];
      result.outputs[o].layout = layouts[o];
      result.outputs[o].stages = stages;
    }
    for (int s = 0; s < stages; ++s) {
      c.stage = s;
      auto replicas = detail::compute_replicas(c);
      for (std::size_t o = 0; o < out_shapes.size(); ++o)
        for (auto& t : replicas[o]) result.outputs[o].data.push_back(std::move(t));
    }
  } catch (const detail::Undefined& e) {
    result.outputs.clear();
    result.error = e.what();
  } catch (const InputError& e) {  // an attribute the shape inference did not need but we do
    result.outputs.clear();
    result.error = e.what();
  }
  return result;
}

GraphEvaluation evaluate_graph(const Graph& graph, const std::map<NodeId, ParallelValue>& given) {
  GraphEvaluation out;
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    if (auto it = given.find(id); it != given.end()) {
      out.values[id] = {it->second};
      continue;
    }
    if (is_source_op(n.op.type)) {
      out.error = graph.describe(id) + " has no value";
      return out;
    }
    std::vector<const ParallelValue*> in;
    for (const auto& t : n.inputs) in.push_back(&out.at(t));
    auto e = evaluate(n.op, in);
    if (!e.ok()) {
      out.error = graph.describe(id) + ": " + e.error;
      return out;
    }
    out.values[id] = std::move(e.outputs);
  }
  return out;
}

}  // namespace unity::rules
