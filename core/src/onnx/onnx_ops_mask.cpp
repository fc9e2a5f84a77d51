// Comparisons, logic, Where and Cast of activations: the mask operators (Compare, Logical, Where,
// Cast; unity/core/ops/mask_kernels.h). On constants the importer folds them instead
// (constant_folding.cpp), and Where with a constant mask and a scalar fill stays the masked fill
// of onnx_ops_elementwise.cpp. A scalar constant operand becomes an attribute (Compare's `scalar`,
// Where's `x` or `y`), as with ScalarAdd; infinities become the largest float, which masks a score
// as well and survives model files.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

double finite_scalar(ImportContext& ctx, const std::string& value) {
  const double v = ctx.constant(value).scalar();
  const double most = std::numeric_limits<float>::max();
  return std::isinf(v) ? std::copysign(most, v) : v;
}

void map_compare(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  static const std::map<std::string, std::pair<std::string, std::string>> kinds = {
      // ONNX op -> (comparison, the comparison with its operands swapped)
      {"Equal", {"equal", "equal"}},
      {"Less", {"less", "greater"}},
      {"Greater", {"greater", "less"}},
      {"LessOrEqual", {"less_or_equal", "greater_or_equal"}},
      {"GreaterOrEqual", {"greater_or_equal", "less_or_equal"}}};
  const auto& [comparison, swapped] = kinds.at(node.op_type());
  const std::string& a = node.input(0);
  const std::string& b = node.input(1);
  const std::string name = node_name(node);
  const Ints expected = broadcast_dims(ctx.dims(a), ctx.dims(b));
  TensorRef out;
  if (ctx.is_scalar_constant(b))
    out = ctx.add(OpType::Compare, {{"comparison", comparison}, {"scalar", finite_scalar(ctx, b)}},
                  {ctx.tensor(a)}, name);
  else if (ctx.is_scalar_constant(a))
    out = ctx.add(OpType::Compare, {{"comparison", swapped}, {"scalar", finite_scalar(ctx, a)}},
                  {ctx.tensor(b)}, name);
  else
    out = ctx.add(OpType::Compare, {{"comparison", comparison}}, {ctx.tensor(a), ctx.tensor(b)},
                  name);
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

void map_logical(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  std::string logic = node.op_type();
  for (char& ch : logic) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string name = node_name(node);
  std::vector<TensorRef> inputs;
  Ints expected;
  for (const auto& input : node.input()) {
    inputs.push_back(ctx.tensor(input));
    expected = broadcast_dims(expected, ctx.dims(input));
  }
  const TensorRef out = ctx.add(OpType::Logical, {{"logic", logic}}, inputs, name);
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

}  // namespace

void emit_where(ImportContext& ctx, const ::onnx::NodeProto& node) {
  const std::string name = node_name(node);
  const std::string& condition = node.input(0);
  Attributes attrs;
  std::vector<TensorRef> inputs{ctx.tensor(condition)};
  Ints expected = ctx.dims(condition);
  bool integer_scalars = false;
  for (int slot = 1; slot <= 2; ++slot) {
    const std::string& value = node.input(slot);
    expected = broadcast_dims(expected, ctx.dims(value));
    if (ctx.is_scalar_constant(value)) {
      attrs.set(slot == 1 ? "x" : "y", finite_scalar(ctx, value));
      integer_scalars = integer_scalars || ctx.constant(value).is_integer();
    } else {
      inputs.push_back(ctx.tensor(value));
    }
  }
  if (inputs.size() == 1 && integer_scalars)
    unsupported_use(node,
                    "Where that selects between two integer constants is not supported (its "
                    "result would be a float tensor)");
  const TensorRef out = ctx.add(OpType::Where, std::move(attrs), inputs, name);
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

void map_cast(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const int to = static_cast<int>(attr_int(node, "to", ::onnx::TensorProto::FLOAT));
  const DataType from = ctx.graph().shape(x).dtype;
  const auto target = to_data_type(to);
  if (!target)
    unsupported_use(node, fmt::format("Cast of an activation to {}, a type Unity's tensors do not "
                                      "hold",
                                      elem_type_name(to)));
  // Precision casts (float32 <-> float16, int32 <-> int64) change no structure: the graph keeps
  // the input's type. Between floats, integers and bools the values change: a Cast.
  auto kind = [](DataType t) { return is_floating(t) ? 0 : t == DataType::Bool ? 2 : 1; };
  if (kind(from) == kind(*target)) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Cast, {{"to", std::string(to_string(*target))}},
                                          {x}, node_name(node)));
}

// IsNaN and IsInf (torch.isnan / isinf, and nan_to_num's masks) as the comparisons they are: a NaN
// is the only value not equal to itself, and an infinity the only one beyond the largest float
// (which a NaN is not).
void map_is_nan(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const std::string name = node_name(node);
  const TensorRef same = ctx.add(OpType::Compare, {{"comparison", std::string("equal")}}, {x, x},
                                 name + ".self_equal");
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Logical, {{"logic", std::string("not")}}, {same}, name));
}

void map_is_inf(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const std::string name = node_name(node);
  const bool negative = attr_int(node, "detect_negative", 1) != 0;
  const bool positive = attr_int(node, "detect_positive", 1) != 0;
  const double most = std::numeric_limits<float>::max();
  auto beyond = [&](TensorRef t, const std::string& comparison, double bound, const char* tag) {
    return ctx.add(OpType::Compare, {{"comparison", comparison}, {"scalar", bound}}, {t},
                   name + tag);
  };
  TensorRef out;
  if (negative && positive)
    out = beyond(ctx.add(OpType::Abs, {}, {x}, name + ".abs"), "greater", most, "");
  else if (positive)
    out = beyond(x, "greater", most, "");
  else if (negative)
    out = beyond(x, "less", -most, "");
  else  // detects nothing: false everywhere (x < -inf)
    out = beyond(x, "less", -std::numeric_limits<double>::max(), "");
  ctx.bind_tensor(node.output(0), out);
}

// CastLike (opset 15; torch's newer exporter writes it for every Python scalar it mixes into a
// tensor's arithmetic) is a Cast to the type of its second input, which the importer knows
// whether that input is a constant or computed.
void map_cast_like(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  if (node.input_size() < 2) unsupported_use(node, "CastLike needs its target_type input");
  ::onnx::NodeProto cast = node;
  cast.set_op_type("Cast");
  cast.mutable_input()->RemoveLast();
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(ctx.elem_type(node.input(1)));
  import_node(ctx, cast, opset);
}

static void register_mask_ops(OnnxImports& table) {
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    table[op] = map_compare;
  for (const char* op : {"Not", "And", "Or", "Xor"}) table[op] = map_logical;
  table["Cast"] = map_cast;
  table["CastLike"] = map_cast_like;
  table["IsNaN"] = map_is_nan;
  table["IsInf"] = map_is_inf;
}

UNITY_REGISTER_ONNX_IMPORTS(register_mask_ops)

}  // namespace unity::onnxio
