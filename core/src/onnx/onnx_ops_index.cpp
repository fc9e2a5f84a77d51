// The index operators: TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin, one node for
// one node. Their indices are activations (graph inputs or computed, e.g. TopK's) or constants,
// which become Constant nodes holding the indices. Numbers that size the output (TopK's k,
// OneHot's depth) must be constants.
#include <fmt/format.h>

#include <optional>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

TensorRef float_activation(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                           const char* what) {
  const std::string& value = node.input(slot);
  if (is_integer_elem_type(ctx.elem_type(value)))
    unsupported_use(node,
                    fmt::format("{} '{}' is an integer tensor; {} takes floating-point values "
                                "only",
                                what, value, node.op_type()));
  return ctx.tensor(value);
}

TensorRef index_activation(ImportContext& ctx, const ::onnx::NodeProto& node, int slot) {
  const std::string& value = node.input(slot);
  if (!is_integer_elem_type(ctx.elem_type(value)))
    unsupported_use(node, fmt::format("the indices '{}' are not integers", value));
  return ctx.tensor(value);
}

void map_topk(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const TensorRef x = float_activation(ctx, node, 0, "the input");
  const auto rank = static_cast<std::int64_t>(ctx.sizes(x).size());
  const std::int64_t k = opset < 10 ? attr_int(node, "k", 0) : size_constant(ctx, node, 1, "k");
  const int axis = normalize_axis(attr_int(node, "axis", -1), rank);
  const std::int64_t extent = ctx.sizes(x)[static_cast<std::size_t>(axis)];
  if (k < 1 || k > extent)
    unsupported_use(
        node, fmt::format("k = {} is outside [1, {}] (the size of axis {})", k, extent, axis));
  // sorted = 0 leaves the order to the implementation: ours is sorted either way.
  const NodeId id = ctx.add_node(
      OpType::TopK,
      {{"k", k},
       {"axis", std::int64_t{axis}},
       {"largest", attr_int(node, "largest", 1) != 0 ? std::int64_t{1} : std::int64_t{0}}},
      {x}, node_name(node));
  ctx.bind_tensor(node.output(0), {id, 0});
  if (node.output_size() > 1 && !node.output(1).empty()) ctx.bind_tensor(node.output(1), {id, 1});
}

void map_gather_elements(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef data = float_activation(ctx, node, 0, "the data");
  const TensorRef idx = index_activation(ctx, node, 1);
  const auto rank = static_cast<std::int64_t>(ctx.sizes(data).size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  ctx.bind_tensor(node.output(0), ctx.add(OpType::GatherElements, {{"axis", std::int64_t{axis}}},
                                          {data, idx}, node_name(node)));
}

// torch.zeros_like(t) as exported: ConstantOfShape(Shape(t)) with value 0 (or no value). As a
// constant it would become a Weight, a parameter with t's (batch-sized) shape; it is t times 0,
// which splits like t.
std::optional<TensorRef> zeros_like(ImportContext& ctx, const std::string& value) {
  const OnnxModel& m = ctx.model();
  const int fill = m.producer(value);
  if (fill < 0 || m.node(fill).op_type() != "ConstantOfShape") return std::nullopt;
  const ::onnx::NodeProto& cos = m.node(fill);
  for (const auto& a : cos.attribute())
    if (a.name() == "value" && a.has_t()) {
      const auto& t = a.t();
      const bool zero = (t.float_data_size() == 1 && t.float_data(0) == 0.0f) ||
                        (t.raw_data().size() == 4 && t.raw_data() == std::string(4, '\0'));
      if (!zero) return std::nullopt;
    }
  const int shape = m.producer(cos.input(0));
  if (shape < 0 || m.node(shape).op_type() != "Shape" || m.node(shape).input_size() != 1)
    return std::nullopt;
  const std::string& like = m.node(shape).input(0);
  if (!ctx.is_tensor(like) || ctx.dims(like) != ctx.dims(value) ||
      is_integer_elem_type(ctx.elem_type(like)))
    return std::nullopt;
  return ctx.add(OpType::ScalarMul, {{"scalar", 0.0}}, {ctx.tensor(like)},
                 node_name(cos) + ".zeros_like");
}

void map_scatter_elements(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const auto zeros = ctx.is_constant(node.input(0)) ? zeros_like(ctx, node.input(0)) : std::nullopt;
  const TensorRef data = zeros ? *zeros : float_activation(ctx, node, 0, "the data");
  const TensorRef idx = index_activation(ctx, node, 1);
  const TensorRef updates = float_activation(ctx, node, 2, "the updates");
  const auto rank = static_cast<std::int64_t>(ctx.sizes(data).size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  Attributes attrs{{"axis", std::int64_t{axis}}};
  const std::string reduction = attr_string(node, "reduction", "none");
  if (reduction == "add")
    attrs.set("reduction", std::string("add"));
  else if (reduction != "none")
    unsupported_use(node,
                    fmt::format("reduction '{}' is not supported (only none and add)", reduction));
  ctx.bind_tensor(node.output(0), ctx.add(OpType::ScatterElements, std::move(attrs),
                                          {data, idx, updates}, node_name(node)));
}

void map_one_hot(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  // ONNX casts floating-point indices to int64, as the operator does.
  const std::string& indices = node.input(0);
  const bool float_indices =
      ctx.is_tensor(indices) && !is_integer_elem_type(ctx.elem_type(indices));
  const TensorRef idx = float_indices ? ctx.tensor(indices) : index_activation(ctx, node, 0);
  const std::int64_t depth = size_constant(ctx, node, 1, "depth");
  if (depth < 1) unsupported_use(node, fmt::format("depth {} is not positive", depth));
  const std::string& values = node.input(2);
  if (!ctx.is_constant(values))
    unsupported_use(node, fmt::format("the values '{}' must be a constant", values));
  const ConstTensor& v = ctx.constant(values);
  if (v.numel() != 2) unsupported_use(node, "the values must be [off_value, on_value]");
  const auto rank = static_cast<std::int64_t>(ctx.sizes(idx).size()) + 1;
  const int axis = normalize_axis(attr_int(node, "axis", -1), rank);
  Attributes attrs{{"depth", depth},
                   {"axis", std::int64_t{axis}},
                   {"off_value", v.as_double(0)},
                   {"on_value", v.as_double(1)}};
  // Integer values give an integer one-hot tensor (held as int64, as every integer tensor).
  if (v.is_integer()) attrs.set("dtype", std::string("int64"));
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::OneHot, std::move(attrs), {idx}, node_name(node)));
}

void map_arg_extreme(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = float_activation(ctx, node, 0, "the input");
  const auto rank = static_cast<std::int64_t>(ctx.sizes(x).size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  Attributes attrs{{"axis", std::int64_t{axis}}};
  if (attr_int(node, "keepdims", 1) == 0) attrs.set("keepdims", std::int64_t{0});
  if (attr_int(node, "select_last_index", 0) != 0) attrs.set("select_last_index", std::int64_t{1});
  ctx.bind_tensor(node.output(0),
                  ctx.add(node.op_type() == "ArgMax" ? OpType::ArgMax : OpType::ArgMin,
                          std::move(attrs), {x}, node_name(node)));
}

// GatherND (batch_dims as given) and ScatterND (reduction none or add) of activations: data of any
// type (integers move without gradients), indices computed or a graph input (constant indices
// become a Weight, refused as above).
void map_gather_nd(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef data = ctx.tensor(node.input(0));
  const TensorRef idx = index_activation(ctx, node, 1);
  const std::int64_t batch_dims = attr_int(node, "batch_dims", 0);
  Attributes attrs;
  if (batch_dims != 0) attrs.set("batch_dims", batch_dims);
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::GatherND, std::move(attrs), {data, idx}, node_name(node)));
}

void map_scatter_nd(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const auto zeros = ctx.is_constant(node.input(0)) ? zeros_like(ctx, node.input(0)) : std::nullopt;
  const TensorRef data = zeros ? *zeros : ctx.tensor(node.input(0));
  const TensorRef idx = index_activation(ctx, node, 1);
  const TensorRef updates = ctx.tensor(node.input(2));
  const std::string reduction = attr_string(node, "reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    unsupported_use(
        node, fmt::format("reduction '{}' is not supported (none, add and mul are)", reduction));
  Attributes attrs;
  if (reduction != "none") attrs.set("reduction", reduction);
  ctx.bind_tensor(node.output(0), ctx.add(OpType::ScatterND, std::move(attrs), {data, idx, updates},
                                          node_name(node)));
}

}  // namespace

static void register_index_ops(OnnxImports& table) {
  table["GatherND"] = map_gather_nd;
  table["ScatterND"] = map_scatter_nd;
  table["TopK"] = map_topk;
  table["GatherElements"] = map_gather_elements;
  table["ScatterElements"] = map_scatter_elements;
  table["Scatter"] = map_scatter_elements;  // opset 9-10: ScatterElements without reduction
  table["OneHot"] = map_one_hot;
  table["ArgMax"] = map_arg_extreme;
  table["ArgMin"] = map_arg_extreme;
}

UNITY_REGISTER_ONNX_IMPORTS(register_index_ops)

}  // namespace unity::onnxio
