#include "unity/core/pcg/training_loss.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity {

std::string_view to_string(LossKind k) {
  return k == LossKind::CrossEntropy ? "cross-entropy" : "mse";
}

LossKind loss_kind_from_string(std::string_view s) {
  if (s == "cross-entropy") return LossKind::CrossEntropy;
  if (s == "mse") return LossKind::Mse;
  throw InputError(fmt::format("unknown loss '{}' (expected cross-entropy or mse)", s));
}

namespace {

bool is_loss_operator(OpType t) { return t == OpType::SoftmaxCrossEntropy || t == OpType::MSELoss; }

bool has_loss_operator(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if (is_loss_operator(n.op.type)) return true;
  return false;
}

// The model's outputs that are objectives (sinks of operators none of whose outputs is read).
std::vector<TensorRef> objective_outputs(const Graph& g) {
  std::vector<TensorRef> out;
  for (const TensorRef sink : g.sinks())
    if (g.uses(sink.node).empty() && is_objective(g, sink)) out.push_back(sink);
  return out;
}

}  // namespace

bool derives_from_loss(const Graph& g, NodeId id) {
  std::vector<NodeId> stack{id};
  std::set<NodeId> seen;
  while (!stack.empty()) {
    const NodeId cur = stack.back();
    stack.pop_back();
    if (!seen.insert(cur).second) continue;
    const Node& n = g.node(cur);
    if (is_loss_operator(n.op.type)) return true;
    for (const auto& in : n.inputs) stack.push_back(in.node);
  }
  return false;
}

bool is_objective(const Graph& g, TensorRef sink) {
  const ParallelTensorShape shape = g.shape(sink);
  return derives_from_loss(g, sink.node) || (shape.rank() == 0 && is_floating(shape.dtype));
}

bool has_loss(const Graph& g) { return has_loss_operator(g) || !objective_outputs(g).empty(); }

namespace {

// An output whose batch is not its leading dim (a sequence-first RNN's [seq, batch, vocab]) is
// transposed batch first, so that labels or targets are batched like every input.
TensorRef batch_first(GraphBuilder& b, const Graph& g, TensorRef out, const std::string& name) {
  const auto sizes = g.shape(out).sizes();
  if (g.batch_size <= 0 || sizes.empty() || sizes.front() == g.batch_size) return out;
  const auto at = std::find(sizes.begin(), sizes.end(), g.batch_size);
  if (at == sizes.end()) return out;
  const auto k = static_cast<std::int64_t>(at - sizes.begin());
  std::vector<std::int64_t> perm{k};
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(sizes.size()); ++d)
    if (d != k) perm.push_back(d);
  return b.transpose(out, perm, name + ".batch_first");
}

}  // namespace

std::optional<AttachedLoss> attach_loss(Graph& g, std::optional<LossKind> requested) {
  if (has_loss(g)) {
    if (requested)
      throw InputError(
          fmt::format("--loss {}: '{}' has a loss already", to_string(*requested), g.name));
    if (has_loss_operator(g)) return std::nullopt;
    AttachedLoss own;
    own.own = true;
    for (const TensorRef sink : objective_outputs(g))
      own.outputs.push_back(fmt::format("'{}'", g.node(sink.node).op.name));
    return own;
  }
  // The model's outputs: floating sinks, but not the unread pieces of an operator whose other
  // outputs are read, nor the parts of a Split that a slice leaves.
  std::vector<TensorRef> outputs, pieces;
  for (const auto& sink : g.sinks()) {
    if (!is_floating(g.shape(sink).dtype) || !g.uses(sink.node).empty()) continue;
    (g.node(sink.node).op.type == OpType::Split ? pieces : outputs).push_back(sink);
  }
  // A model that ends in a slice (a Split's one piece) has only pieces to offer.
  if (outputs.empty()) outputs = pieces;
  if (outputs.empty())
    throw InputError(fmt::format("'{}' has no floating output to attach a loss to", g.name));
  AttachedLoss a;
  a.chosen = !requested;
  a.kind = requested
               ? *requested
               : (g.shape(outputs.front()).rank() == 2 ? LossKind::CrossEntropy : LossKind::Mse);
  GraphBuilder b(g);
  for (TensorRef out : outputs) {
    const std::string name = g.node(out.node).op.name.empty() ? fmt::format("output{}", out.node)
                                                              : g.node(out.node).op.name;
    a.outputs.push_back(fmt::format("'{}' [{}]", name, fmt::join(g.shape(out).sizes(), ", ")));
    out = batch_first(b, g, out, name);
    const ParallelTensorShape shape = g.shape(out);
    auto sizes = shape.sizes();
    if (a.kind == LossKind::CrossEntropy) {
      if (sizes.size() < 2)
        throw InputError(fmt::format(
            "--loss cross-entropy needs an output of at least 2 dims (batch, classes); '{}' is "
            "[{}]",
            name, fmt::join(sizes, ", ")));
      sizes.pop_back();
      b.softmax_cross_entropy(out, b.input(name + ".labels", sizes, DataType::Int64),
                              name + ".loss");
    } else {
      b.mse_loss(out, b.input(name + ".targets", sizes, shape.dtype), name + ".loss");
    }
  }
  g.validate();
  return a;
}

std::string describe(const AttachedLoss& a, const std::string& model) {
  if (a.own)
    return fmt::format("'{}' ends in its own loss: output{} {} (0-d) trained as {}", model,
                       a.outputs.size() == 1 ? "" : "s", fmt::join(a.outputs, ", "),
                       a.outputs.size() == 1 ? "it is" : "they are");
  return fmt::format("'{}' has no loss: attached {} to output{} {} ({} synthesised{})", model,
                     to_string(a.kind), a.outputs.size() == 1 ? "" : "s",
                     fmt::join(a.outputs, ", "),
                     a.kind == LossKind::CrossEntropy ? "labels" : "targets",
                     a.chosen ? "; choose with --loss cross-entropy|mse" : "");
}

}  // namespace unity
