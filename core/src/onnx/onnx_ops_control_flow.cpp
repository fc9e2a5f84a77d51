// Control flow and sequences whose every decision is known at import time, flattened into the one
// static graph a plan lays out. Exporters write them for Python that runs a fixed number of times:
// torch.repeat_interleave on a dimension the tracer lost track of becomes a Loop over the repeats
// that fills a sequence (SequenceEmpty, SplitToSequence, SequenceInsert, ConcatFromSequence).
// - A Loop whose trip count and condition are constants is unrolled: each iteration imports the
//   body's nodes under fresh value names, the body's inputs bound to the iteration number, the
//   condition and the carried values; scan outputs are stacked along a new first axis.
// - An If whose condition is a constant is its chosen branch. One whose condition is computed from
//   the model's inputs runs both branches and selects each output with a Where, as torch.where
//   would: the same values for branches without side effects (ONNX's have none), at the cost of
//   both; the outputs of the two branches must have one shape.
// - A sequence is a list of values at import time (each a tensor or a constant); SplitToSequence
//   slices, ConcatFromSequence concatenates, SequenceAt picks by a constant position.
// The pieces are imported as the ONNX nodes they stand for (Slice, Concat, Unsqueeze, Squeeze), so
// constants fold and activations become Split and Concat as anywhere else. A trip count, condition
// or position computed from the model's inputs is refused (but an If's condition, above): the
// graph would depend on the data.
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"
#include "unity/core/onnx/onnx_operator_scope.h"

namespace unity::onnxio {
namespace {

// Unrolling multiplies the body; past this many iterations the export should be a layer, and past
// this many nodes imported from subgraphs in all (loops nested in loops) the model is refused.
constexpr std::int64_t kMaxUnrolledIterations = 4096;
constexpr std::int64_t kMaxInlinedNodes = 200000;

using Renames = std::map<std::string, std::string>;

const std::string& renamed(const Renames& names, const std::string& value) {
  auto it = names.find(value);
  return it == names.end() ? value : it->second;
}

// Renames the values a subgraph reads from enclosing scopes (those it does not define itself).
void rename_free_values(::onnx::GraphProto& graph, const Renames& names) {
  std::set<std::string> defined;
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& node : graph.node())
    for (const auto& output : node.output()) defined.insert(output);
  Renames free;
  for (const auto& [from, to] : names)
    if (!defined.count(from)) free.emplace(from, to);
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) input = renamed(free, input);
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) rename_free_values(*attr.mutable_g(), free);
      for (auto& g : *attr.mutable_graphs()) rename_free_values(g, free);
    }
  }
  for (auto& output : *graph.mutable_output()) output.set_name(renamed(free, output.name()));
}

// `to` names the same value as `from`, a sequence or not.
void bind_same(ImportContext& ctx, const std::string& to, const std::string& from) {
  if (ctx.is_sequence(from))
    ctx.bind_sequence(to, ctx.sequence(from));
  else
    ctx.alias(to, from);
}

// Imports one ONNX node that stands for part of `origin`, with fresh output names; returns them.
class Synthesizer {
 public:
  Synthesizer(ImportContext& ctx, const ::onnx::NodeProto& origin, std::int64_t opset)
      : ctx_(ctx), origin_(origin), opset_(opset) {}

  std::string ints(const std::vector<std::int64_t>& values) {
    return ctx_.fresh_constant(
        node_name(origin_) + "/const",
        ConstTensor::from_ints(values, {static_cast<std::int64_t>(values.size())}));
  }

  // op over `inputs`; `attrs` adds attributes to the node before it is imported.
  template <typename Attrs>
  std::string emit(const std::string& op, const std::vector<std::string>& inputs, Attrs attrs) {
    ::onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(fmt::format("{}/{}{}", node_name(origin_), op, ++count_));
    for (const auto& input : inputs) node.add_input(input);
    const std::string output = ctx_.fresh_name(node.name());
    node.add_output(output);
    attrs(node);
    import_node(ctx_, node, opset_);
    return output;
  }
  std::string emit(const std::string& op, const std::vector<std::string>& inputs) {
    return emit(op, inputs, [](::onnx::NodeProto&) {});
  }

  static void set_int(::onnx::NodeProto& node, const std::string& name, std::int64_t value) {
    auto* attr = node.add_attribute();
    attr->set_name(name);
    attr->set_type(::onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  static void set_ints(::onnx::NodeProto& node, const std::string& name,
                       const std::vector<std::int64_t>& values) {
    auto* attr = node.add_attribute();
    attr->set_name(name);
    attr->set_type(::onnx::AttributeProto::INTS);
    for (auto v : values) attr->add_ints(v);
  }

  std::string slice(const std::string& x, std::int64_t axis, std::int64_t start, std::int64_t end) {
    return emit("Slice", {x, ints({start}), ints({end}), ints({axis})});
  }
  // Unsqueeze and Squeeze took their axes as an attribute before opset 13.
  std::string unsqueeze(const std::string& x, std::int64_t axis) {
    return with_axes("Unsqueeze", x, axis);
  }
  std::string squeeze(const std::string& x, std::int64_t axis) {
    return with_axes("Squeeze", x, axis);
  }
  std::string concat(const std::vector<std::string>& xs, std::int64_t axis) {
    return emit("Concat", xs, [&](::onnx::NodeProto& n) { set_int(n, "axis", axis); });
  }

 private:
  std::string with_axes(const std::string& op, const std::string& x, std::int64_t axis) {
    if (opset_ >= 13) return emit(op, {x, ints({axis})});
    return emit(op, {x}, [&](::onnx::NodeProto& n) { set_ints(n, "axes", {axis}); });
  }

  ImportContext& ctx_;
  const ::onnx::NodeProto& origin_;
  std::int64_t opset_;
  int count_ = 0;
};

// A constant scalar deciding the graph's structure (a trip count, a condition, a position).
std::int64_t structural_int(ImportContext& ctx, const ::onnx::NodeProto& node,
                            const std::string& value, const char* what) {
  if (!ctx.is_constant(value)) {
    unsupported_use(node, fmt::format("its {} ('{}') is computed from the model's inputs, so the "
                                      "graph's structure would depend on the data; a plan is one "
                                      "static graph",
                                      what, value));
  }
  const ConstTensor& c = ctx.constant(value);
  if (c.numel() != 1)
    unsupported_use(node, fmt::format("its {} ('{}') must hold one value, it has shape {}", what,
                                      value, format_dims(c.dims)));
  return c.as_int(0);
}

// Imports the nodes of `body` once: `names` maps the body's inputs (and, on return, its values) to
// the enclosing graph's. Returns the body's outputs under their new names.
std::vector<std::string> inline_graph(ImportContext& ctx, const ::onnx::NodeProto& owner,
                                      const ::onnx::GraphProto& body, Renames names,
                                      const std::string& prefix, std::int64_t opset) {
  for (const auto& init : body.initializer()) {
    const std::string name = ctx.fresh_name(prefix + init.name());
    ctx.bind_initializer(name, &init);
    names[init.name()] = name;
  }
  if (ctx.count_inlined_nodes(body.node_size()) > kMaxInlinedNodes) {
    unsupported_use(owner, fmt::format("unrolling it imports more than {} nodes from subgraphs; "
                                       "export the model with its loops as layers",
                                       kMaxInlinedNodes));
  }
  for (const auto& original : body.node()) {
    if (!is_supported_op(original)) {
      std::string why;
      if (const OnnxOutOfScope* scope = onnx_out_of_scope(original.domain(), original.op_type()))
        why = fmt::format(" ({}): {}", scope->category, scope->reason);
      unsupported_use(owner, fmt::format("its subgraph uses {}, which Unity does not import{}",
                                         describe_node(original), why));
    }
    ::onnx::NodeProto node = original;
    node.set_name(prefix + node_name(original));
    for (auto& input : *node.mutable_input()) input = renamed(names, input);
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) rename_free_values(*attr.mutable_g(), names);
      for (auto& g : *attr.mutable_graphs()) rename_free_values(g, names);
    }
    for (auto& output : *node.mutable_output()) {
      if (output.empty()) continue;
      const std::string name = ctx.fresh_name(prefix + output);
      names[output] = name;
      output = name;
    }
    import_node(ctx, node, opset);
  }
  std::vector<std::string> outputs;
  for (const auto& output : body.output()) {
    const std::string& name = renamed(names, output.name());
    if (!ctx.known(name))
      unsupported_use(
          owner, fmt::format("its subgraph's output '{}' is produced by no node", output.name()));
    outputs.push_back(name);
  }
  return outputs;
}

void import_loop(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const auto* body_attr = find_attribute(node, "body");
  if (!body_attr || !body_attr->has_g()) unsupported_use(node, "it has no body graph");
  const ::onnx::GraphProto& body = body_attr->g();
  const int carried = node.input_size() - 2;
  if (carried < 0 || body.input_size() != carried + 2 || body.output_size() < carried + 1) {
    unsupported_use(node, fmt::format("its body takes {} inputs and gives {} outputs for {} "
                                      "carried values",
                                      body.input_size(), body.output_size(), std::max(carried, 0)));
  }
  const std::string& trip_input = input_name(node, 0);
  const std::string& cond_input = input_name(node, 1);
  if (trip_input.empty() && cond_input.empty())
    unsupported_use(node, "it has neither a trip count nor a condition: it would never end");
  const std::int64_t trips = trip_input.empty()
                                 ? kMaxUnrolledIterations + 1
                                 : structural_int(ctx, node, trip_input, "trip count");
  bool go_on = cond_input.empty() || structural_int(ctx, node, cond_input, "condition") != 0;

  std::vector<std::string> state;
  for (int i = 0; i < carried; ++i) state.push_back(node.input(i + 2));
  const int scanned = body.output_size() - 1 - carried;
  std::vector<std::vector<std::string>> scans(static_cast<std::size_t>(scanned));
  std::int64_t iteration = 0;
  for (; iteration < trips && go_on; ++iteration) {
    if (iteration == kMaxUnrolledIterations) {
      unsupported_use(node, fmt::format("it runs more than {} iterations; Unity unrolls loops, and "
                                        "one this long should be exported as a layer",
                                        kMaxUnrolledIterations));
    }
    const std::string prefix = fmt::format("{}/iter{}/", node_name(node), iteration);
    Renames names;
    names[body.input(0).name()] = ctx.fresh_constant(
        prefix + "iteration", ConstTensor::from_ints({iteration}, {}, ::onnx::TensorProto::INT64));
    names[body.input(1).name()] = ctx.fresh_constant(
        prefix + "cond", ConstTensor::from_ints({1}, {}, ::onnx::TensorProto::BOOL));
    for (int i = 0; i < carried; ++i) names[body.input(i + 2).name()] = state[i];
    const auto outputs = inline_graph(ctx, node, body, std::move(names), prefix, opset);
    go_on = structural_int(ctx, node, outputs[0], "condition") != 0;
    for (int i = 0; i < carried; ++i) state[i] = outputs[1 + i];
    for (int k = 0; k < scanned; ++k) scans[k].push_back(outputs[1 + carried + k]);
  }
  for (int i = 0; i < carried && i < node.output_size(); ++i)
    if (!node.output(i).empty()) bind_same(ctx, node.output(i), state[i]);
  Synthesizer make(ctx, node, opset);
  for (int k = 0; k < scanned && carried + k < node.output_size(); ++k) {
    const std::string& output = node.output(carried + k);
    if (output.empty()) continue;
    if (scans[k].empty())
      unsupported_use(node, fmt::format("its scan output '{}' would be empty: the loop runs no "
                                        "iteration",
                                        output));
    std::vector<std::string> stacked;
    for (const auto& value : scans[k]) stacked.push_back(make.unsqueeze(value, 0));
    ctx.alias(output, stacked.size() == 1 ? stacked[0] : make.concat(stacked, 0));
  }
}

// An If whose condition is computed: both branches, each output a Where of the condition.
void import_if_by_where(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const std::string name = node_name(node);
  const std::string& cond_value = input_name(node, 0);
  TensorRef cond = ctx.tensor(cond_value);
  if (ctx.graph().shape(cond).num_elements() != 1)
    unsupported_use(node, fmt::format("its condition ('{}') has shape {}, not one value",
                                      cond_value, format_dims(ctx.sizes(cond))));
  cond = ctx.reshape(cond, {}, name + ".cond");
  if (ctx.graph().shape(cond).dtype != DataType::Bool)
    cond = ctx.add(OpType::Cast, {{"to", std::string("bool")}}, {cond}, name + ".cond.bool");
  std::vector<std::string> branches[2];
  for (int b = 0; b < 2; ++b) {
    const char* which = b == 0 ? "then_branch" : "else_branch";
    const auto* branch = find_attribute(node, which);
    if (!branch || !branch->has_g())
      unsupported_use(node, fmt::format("it has no {} graph", which));
    branches[b] = inline_graph(ctx, node, branch->g(), {},
                               fmt::format("{}/{}/", name, b == 0 ? "then" : "else"), opset);
    if (static_cast<int>(branches[b].size()) < node.output_size())
      unsupported_use(node, fmt::format("its {} gives fewer outputs than the node has", which));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    const std::string& a = branches[0][static_cast<std::size_t>(i)];
    const std::string& b = branches[1][static_cast<std::size_t>(i)];
    if (ctx.is_sequence(a) || ctx.is_sequence(b))
      unsupported_use(node, fmt::format("its output {} is a sequence and its condition ('{}') is "
                                        "computed: a list of tensors cannot be selected by value",
                                        i, cond_value));
    if (ctx.dims(a) != ctx.dims(b))
      unsupported_use(
          node, fmt::format("its condition ('{}') is computed and its branches give "
                            "output {} of shapes {} and {}: a plan needs one shape",
                            cond_value, i, format_dims(ctx.dims(a)), format_dims(ctx.dims(b))));
    ctx.bind_tensor(node.output(i), ctx.add(OpType::Where, {}, {cond, ctx.tensor(a), ctx.tensor(b)},
                                            fmt::format("{}.output{}", name, i)));
  }
}

void import_if(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  if (ctx.is_tensor(input_name(node, 0))) {
    import_if_by_where(ctx, node, opset);
    return;
  }
  const bool then = structural_int(ctx, node, input_name(node, 0), "condition") != 0;
  const auto* branch = find_attribute(node, then ? "then_branch" : "else_branch");
  if (!branch || !branch->has_g())
    unsupported_use(node, fmt::format("it has no {} graph", then ? "then_branch" : "else_branch"));
  const auto outputs =
      inline_graph(ctx, node, branch->g(), {},
                   fmt::format("{}/{}/", node_name(node), then ? "then" : "else"), opset);
  if (static_cast<int>(outputs.size()) < node.output_size())
    unsupported_use(node, "its branch gives fewer outputs than the node has");
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty()) bind_same(ctx, node.output(i), outputs[i]);
}

// A position in a sequence of `size` (negative counts from the end); `insert` allows size itself.
std::size_t sequence_position(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                              std::size_t size, bool insert) {
  const std::string& value = input_name(node, slot);
  const auto n = static_cast<std::int64_t>(size);
  std::int64_t p =
      value.empty() ? (insert ? n : n - 1) : structural_int(ctx, node, value, "position");
  if (p < 0) p += n;
  if (p < 0 || p > n || (p == n && !insert))
    unsupported_use(node, fmt::format("position {} is outside a sequence of {} values", p, n));
  return static_cast<std::size_t>(p);
}

void import_sequence_empty(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  ctx.bind_sequence(node.output(0), {});
}

void import_sequence_construct(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  ctx.bind_sequence(node.output(0), {node.input().begin(), node.input().end()});
}

void import_sequence_insert(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  auto values = ctx.sequence(node.input(0));
  const auto at = sequence_position(ctx, node, 2, values.size(), true);
  values.insert(values.begin() + static_cast<std::ptrdiff_t>(at), node.input(1));
  ctx.bind_sequence(node.output(0), std::move(values));
}

void import_sequence_erase(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  auto values = ctx.sequence(node.input(0));
  const auto at = sequence_position(ctx, node, 1, values.size(), false);
  values.erase(values.begin() + static_cast<std::ptrdiff_t>(at));
  ctx.bind_sequence(node.output(0), std::move(values));
}

void import_sequence_at(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const auto& values = ctx.sequence(node.input(0));
  bind_same(ctx, node.output(0), values[sequence_position(ctx, node, 1, values.size(), false)]);
}

void import_sequence_length(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const auto n = static_cast<std::int64_t>(ctx.sequence(node.input(0)).size());
  ctx.bind_constant(node.output(0), ConstTensor::from_ints({n}, {}));
}

void import_split_to_sequence(ImportContext& ctx, const ::onnx::NodeProto& node,
                              std::int64_t opset) {
  const std::string& x = node.input(0);
  const auto dims = ctx.dims(x);
  const int axis =
      normalize_axis(attr_int(node, "axis", 0), static_cast<std::int64_t>(dims.size()));
  const std::int64_t size = dims[axis];
  const std::string& split = input_name(node, 1);
  std::vector<std::int64_t> lengths;
  bool squeeze = false;
  if (split.empty()) {  // pieces of one, the axis dropped unless keepdims
    lengths.assign(static_cast<std::size_t>(size), 1);
    squeeze = attr_int(node, "keepdims", 1) == 0;
  } else {
    if (!ctx.is_constant(split))
      unsupported_use(node,
                      fmt::format("its split ('{}') is computed from the model's inputs", split));
    const ConstTensor& c = ctx.constant(split);
    if (c.dims.empty()) {  // equal chunks, the last one shorter
      const std::int64_t chunk = c.as_int(0);
      if (chunk <= 0) unsupported_use(node, fmt::format("its split {} is not positive", chunk));
      for (std::int64_t at = 0; at < size; at += chunk)
        lengths.push_back(std::min(chunk, size - at));
    } else {
      lengths = c.to_ints();
      std::int64_t total = 0;
      for (auto l : lengths) total += l;
      if (total != size)
        unsupported_use(node,
                        fmt::format("its split sizes add up to {}, the axis has {}", total, size));
    }
  }
  Synthesizer make(ctx, node, opset);
  std::vector<std::string> pieces;
  std::int64_t start = 0;
  for (const auto length : lengths) {
    std::string piece = make.slice(x, axis, start, start + length);
    pieces.push_back(squeeze ? make.squeeze(piece, axis) : piece);
    start += length;
  }
  ctx.bind_sequence(node.output(0), std::move(pieces));
}

void import_concat_from_sequence(ImportContext& ctx, const ::onnx::NodeProto& node,
                                 std::int64_t opset) {
  const auto& values = ctx.sequence(node.input(0));
  if (values.empty()) unsupported_use(node, "it concatenates an empty sequence");
  const bool new_axis = attr_int(node, "new_axis", 0) != 0;
  const auto rank = static_cast<std::int64_t>(ctx.dims(values.front()).size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank + (new_axis ? 1 : 0));
  Synthesizer make(ctx, node, opset);
  std::vector<std::string> parts;
  for (const auto& value : values) parts.push_back(new_axis ? make.unsqueeze(value, axis) : value);
  ctx.alias(node.output(0), parts.size() == 1 ? parts[0] : make.concat(parts, axis));
}

}  // namespace

static void register_control_flow_ops(OnnxImports& table) {
  table["Loop"] = import_loop;
  table["If"] = import_if;
  table["SequenceEmpty"] = import_sequence_empty;
  table["SequenceConstruct"] = import_sequence_construct;
  table["SequenceInsert"] = import_sequence_insert;
  table["SequenceErase"] = import_sequence_erase;
  table["SequenceAt"] = import_sequence_at;
  table["SequenceLength"] = import_sequence_length;
  table["SplitToSequence"] = import_split_to_sequence;
  table["ConcatFromSequence"] = import_concat_from_sequence;
}

UNITY_REGISTER_ONNX_IMPORTS(register_control_flow_ops)

}  // namespace unity::onnxio
