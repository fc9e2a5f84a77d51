// Element-wise operators: arithmetic with a scalar constant (our ScalarAdd/ScalarMul/Pow) or with
// tensors (Add/Sub/Mul/Div), Softmax, Dropout and the masked fill (Where with a constant mask);
// the reductions are onnx_ops_reduce.cpp's, the mask operators and Cast onnx_ops_mask.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "onnx/attention_masks.h"
#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

void map_neg(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  ctx.bind_tensor(node.output(0), ctx.add(OpType::ScalarMul, {{"scalar", -1.0}},
                                          {ctx.tensor(node.input(0))}, node_name(node)));
}

void map_reciprocal(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Pow, {{"scalar", -1.0}},
                                          {ctx.tensor(node.input(0))}, node_name(node)));
}

void map_clip(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset);

// x op c (or c op x when `constant_first`) with a scalar constant c, in our scalar operators.
TensorRef scalar_arithmetic(ImportContext& ctx, const std::string& op, TensorRef x, double c,
                            bool constant_first, const std::string& name) {
  auto scalar_op = [&](OpType type, double value, TensorRef input, const std::string& n) {
    return ctx.add(type, {{"scalar", value}}, {input}, n);
  };
  if (op == "Add") return scalar_op(OpType::ScalarAdd, c, x, name);
  if (op == "Mul") return scalar_op(OpType::ScalarMul, c, x, name);
  if (op == "Sub") {
    if (!constant_first) return scalar_op(OpType::ScalarAdd, -c, x, name);
    const TensorRef negated = scalar_op(OpType::ScalarMul, -1.0, x, name + ".neg");
    return scalar_op(OpType::ScalarAdd, c, negated, name);
  }
  // Div
  if (!constant_first) {
    if (c == 0.0) throw InputError(fmt::format("node '{}' divides by the constant 0", name));
    return scalar_op(OpType::ScalarMul, 1.0 / c, x, name);
  }
  const TensorRef reciprocal =
      scalar_op(OpType::Pow, -1.0, x, c == 1.0 ? name : name + ".reciprocal");
  return c == 1.0 ? reciprocal : scalar_op(OpType::ScalarMul, c, reciprocal, name);
}

// A constant added to attention scores may be a causal mask: remember its Weight for
// fuse_attention.
void note_if_causal_mask(ImportContext& ctx, const std::string& value, TensorRef weight) {
  if (!ctx.is_constant(value) || product(ctx.dims(value)) > kMaxFoldElements) return;
  if (is_causal_additive_mask(ctx.constant(value))) ctx.note_causal_mask(weight.node);
}

void map_binary(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& op = node.op_type();
  const std::string& a = node.input(0);
  const std::string& b = node.input(1);
  const std::string name = node_name(node);
  const Ints expected = broadcast_dims(ctx.dims(a), ctx.dims(b));
  TensorRef out;
  // Our scalar operators are floating; integers (index arithmetic: position ids less one) take
  // the constant as a tensor operand and the integer kernel.
  auto integer = [&](const std::string& v) {
    return ctx.is_tensor(v) && !is_floating(ctx.graph().shape(ctx.tensor(v)).dtype);
  };
  if (ctx.is_scalar_constant(b) && !integer(a)) {
    out = scalar_arithmetic(ctx, op, ctx.tensor(a), ctx.constant(b).scalar(), false, name);
  } else if (ctx.is_scalar_constant(a) && !integer(b)) {
    out = scalar_arithmetic(ctx, op, ctx.tensor(b), ctx.constant(a).scalar(), true, name);
  } else {
    static const std::map<std::string, OpType> types = {
        {"Add", OpType::Add}, {"Sub", OpType::Sub}, {"Mul", OpType::Mul}, {"Div", OpType::Div}};
    // A non-scalar constant operand (a mask, a position table) becomes a Weight.
    const TensorRef ta = ctx.tensor(a);
    const TensorRef tb = ctx.tensor(b);
    if (op == "Add") {
      note_if_causal_mask(ctx, a, ta);
      note_if_causal_mask(ctx, b, tb);
    }
    out = ctx.add(types.at(op), {}, {ta, tb}, name);
  }
  // A scalar stored as [1, 1, 1] raises the rank in ONNX broadcasting; keep ONNX's shape.
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

void map_pow(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& exponent = node.input(1);
  if (!ctx.is_scalar_constant(exponent)) {
    emit_tensor_pow(ctx, node);  // Arithmetic's pow (onnx_ops_arithmetic.cpp)
    return;
  }
  const TensorRef x = ctx.tensor(node.input(0));
  const TensorRef out =
      ctx.add(OpType::Pow, {{"scalar", ctx.constant(exponent).scalar()}}, {x}, node_name(node));
  ctx.bind_tensor(node.output(0), ctx.reshape(out, broadcast_dims(ctx.sizes(x), ctx.dims(exponent)),
                                              node_name(node) + ".broadcast"));
}

void map_softmax(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  emit_along_axis(ctx, node, opset, OpType::Softmax);
}

void map_dropout(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  require_only_first_output(ctx, node);
  double rate = 0.5;
  if (opset < 12)
    rate = attr_float(node, "ratio", 0.5);
  else if (const std::string& r = input_name(node, 1); !r.empty())
    rate = ctx.constant(r).scalar();
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Dropout, {{"rate", rate}},
                                          {ctx.tensor(node.input(0))}, node_name(node)));
}

// Where(mask, fill, x) or Where(mask, x, fill) with a constant mask and a scalar fill: a masked
// fill (torch's masked_fill), typically of attention scores. A masking fill (-inf, -1e9) becomes
// the Add of an additive mask, remembered when causal; another fill is exact as
// x * keep + fill * (1 - keep). The mask constants become Weights, like any constant tensor
// operand.
void map_where(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& condition = node.input(0);
  const bool fill_first = ctx.is_constant(node.input(1));
  // A computed condition, or a constant one selecting between two activations: the operator.
  if (!ctx.is_constant(condition) || fill_first == ctx.is_constant(node.input(2))) {
    emit_where(ctx, node);
    return;
  }
  const std::string& x = node.input(fill_first ? 2 : 1);
  const std::string& fill_value = node.input(fill_first ? 1 : 2);
  if (!ctx.is_scalar_constant(fill_value)) {
    unsupported_use(node, fmt::format("Where with a non-scalar constant value '{}' of shape {}",
                                      fill_value, format_dims(ctx.dims(fill_value))));
  }
  if (product(ctx.dims(condition)) > kMaxFoldElements)
    unsupported_use(node, "the Where condition is too large to read");
  const double fill = ctx.constant(fill_value).scalar();
  const ConstTensor& cond = ctx.constant(condition);
  const std::string name = node_name(node);
  const Ints expected =
      broadcast_dims(broadcast_dims(ctx.dims(condition), ctx.dims(x)), ctx.dims(fill_value));
  const TensorRef xt = ctx.tensor(x);
  bool any_filled = false;
  for (std::int64_t i = 0; i < cond.numel() && !any_filled; ++i)
    any_filled = (cond.as_double(i) != 0.0) == fill_first;
  TensorRef out = xt;
  if (!any_filled) {
    // Nothing is filled: the value passes through.
  } else if (auto mask = additive_mask(cond, fill, fill_first)) {
    const bool causal = is_causal_additive_mask(*mask);
    const std::string mask_value = node.output(0) + ".mask";
    ctx.bind_constant(mask_value, std::move(*mask));
    const TensorRef m = ctx.tensor(mask_value);
    if (causal) ctx.note_causal_mask(m.node);
    out = ctx.add(OpType::Add, {}, {xt, m}, name);
  } else {
    std::vector<double> keep, filled;
    for (std::int64_t i = 0; i < cond.numel(); ++i) {
      const bool selected = (cond.as_double(i) != 0.0) == fill_first;
      keep.push_back(selected ? 0.0 : 1.0);
      filled.push_back(selected ? fill : 0.0);
    }
    const std::string keep_value = node.output(0) + ".keep";
    ctx.bind_constant(keep_value, ConstTensor::from_doubles(std::move(keep), cond.dims));
    out = ctx.add(OpType::Mul, {}, {xt, ctx.tensor(keep_value)}, name + ".keep");
    if (fill != 0.0) {
      const std::string fill_tensor = node.output(0) + ".fill";
      ctx.bind_constant(fill_tensor, ConstTensor::from_doubles(std::move(filled), cond.dims));
      out = ctx.add(OpType::Add, {}, {out, ctx.tensor(fill_tensor)}, name);
    }
  }
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

// min(max(x, low), high) from operators the PCG has: a Relu for Clip(min 0) (ReLU), else
// low + Relu(x - low) - Relu(x - high) (ReLU6 in MobileNets, HardSigmoid's clamp); one bound alone
// drops its Relu. Exact, with the same gradient almost everywhere.
constexpr double kNoBound = std::numeric_limits<double>::quiet_NaN();

// Clip of integers: Arithmetic's max and min with the bounds as its scalar (Relu is floating); a
// NaN bound is none.
TensorRef integer_clip(ImportContext& ctx, TensorRef x, double low, double high,
                       const std::string& name) {
  auto bound = [&](TensorRef in, const char* function, double value, const std::string& n) {
    Attributes attrs;
    attrs.set("function", std::string(function));
    attrs.set("scalar", value);
    return ctx.add(OpType::Arithmetic, attrs, {in}, n);
  };
  const bool has_high = !std::isnan(high);
  const TensorRef y = std::isnan(low) ? x : bound(x, "max", low, has_high ? name + ".low" : name);
  return has_high ? bound(y, "min", high, name) : y;
}

TensorRef clip(ImportContext& ctx, TensorRef x, std::optional<double> low_bound,
               std::optional<double> high_bound, const std::string& name) {
  // A NaN bound is none, as is one past float's range.
  double low = low_bound.value_or(kNoBound), high = high_bound.value_or(kNoBound);
  if (high >= 3.0e38) high = kNoBound;
  if (low <= -3.0e38) low = kNoBound;
  const bool has_low = !std::isnan(low), has_high = !std::isnan(high);
  if (!has_low && !has_high) return x;
  if (has_low && has_high && low > high)
    throw InputError(
        fmt::format("node '{}': Clip to [{}, {}] has its bounds reversed", name, low, high));
  if (!is_floating(ctx.graph().shape(x).dtype)) return integer_clip(ctx, x, low, high, name);
  auto shifted_relu = [&](double by, const std::string& suffix) {
    const TensorRef t =
        by == 0.0 ? x
                  : ctx.add(OpType::ScalarAdd, {{"scalar", -by}}, {x}, name + suffix + ".shift");
    return ctx.add(OpType::Relu, {}, {t}, name + suffix);
  };
  if (!has_high) {
    const TensorRef r = shifted_relu(low, low == 0.0 ? "" : ".low");
    return low == 0.0 ? r : ctx.add(OpType::ScalarAdd, {{"scalar", low}}, {r}, name);
  }
  if (!has_low) {  // min(x, high) = x - Relu(x - high)
    const TensorRef over = shifted_relu(high, ".high");
    return ctx.add(OpType::Sub, {}, {x, over}, name);
  }
  const TensorRef below = shifted_relu(low, ".low");
  const TensorRef above = shifted_relu(high, ".high");
  const TensorRef inside =
      ctx.add(OpType::Sub, {}, {below, above}, low == 0.0 ? name : name + ".span");
  return low == 0.0 ? inside : ctx.add(OpType::ScalarAdd, {{"scalar", low}}, {inside}, name);
}

void map_clip(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  std::optional<double> low, high;
  if (opset < 11) {
    if (find_attribute(node, "min")) low = attr_float(node, "min", 0.0);
    if (find_attribute(node, "max")) high = attr_float(node, "max", 0.0);
  } else {
    if (const std::string& lo = input_name(node, 1); !lo.empty()) low = ctx.constant(lo).scalar();
    if (const std::string& hi = input_name(node, 2); !hi.empty()) high = ctx.constant(hi).scalar();
  }
  ctx.bind_tensor(node.output(0), clip(ctx, ctx.tensor(node.input(0)), low, high, node_name(node)));
}

}  // namespace

void emit_along_axis(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset,
                     OpType type) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  const int axis = normalize_axis(attr_int(node, "axis", opset < 13 ? 1 : -1), rank);
  const std::string name = node_name(node);
  if (opset >= 13 || axis == rank - 1) {
    ctx.bind_tensor(node.output(0), ctx.add(type, {{"axis", std::int64_t{axis}}}, {x}, name));
    return;
  }
  // Before opset 13 these normalise over all dims from `axis` on, as one flattened dim.
  const Ints head(sizes.begin(), sizes.begin() + axis);
  const Ints tail(sizes.begin() + axis, sizes.end());
  const TensorRef flat = ctx.reshape(x, {product(head), product(tail)}, name + ".flatten");
  const TensorRef y = ctx.add(type, {{"axis", std::int64_t{1}}}, {flat}, name);
  ctx.bind_tensor(node.output(0), ctx.reshape(y, sizes, name + ".unflatten"));
}

static void register_elementwise_ops(OnnxImports& table) {
  table["Neg"] = map_neg;
  table["Reciprocal"] = map_reciprocal;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) table[op] = map_binary;
  table["Pow"] = map_pow;
  table["Softmax"] = map_softmax;
  table["Dropout"] = map_dropout;
  table["Clip"] = map_clip;
  table["Where"] = map_where;
}

UNITY_REGISTER_ONNX_IMPORTS(register_elementwise_ops)

}  // namespace unity::onnxio
