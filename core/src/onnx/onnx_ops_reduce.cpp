// ONNX's reductions: ReduceSum and ReduceMean as the operators of those names; ReduceMax,
// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp as
// one Reduction node with its `reduction`. The axes are an attribute (before opset 18; ReduceSum
// from opset 13 takes them as an input, as every reduction does from opset 18), which must then be
// a constant. No axes reduce every dim, or with noop_with_empty_axes=1 leave the input as it is.
#include <fmt/format.h>

#include <set>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"
#include "unity/core/ops/reduction.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

void map_reduce(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const auto rank = static_cast<std::int64_t>(ctx.sizes(x).size());
  Ints axes;
  if (auto attr = attr_ints(node, "axes"))
    axes = *attr;
  else if (const std::string& a = input_name(node, 1); !a.empty())
    axes = ctx.constant(a).to_ints();
  if (axes.empty()) {
    if (attr_int(node, "noop_with_empty_axes", 0) != 0) {
      ctx.bind_tensor(node.output(0), x);
      return;
    }
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::set<std::int64_t> normalized;
  for (auto axis : axes) normalized.insert(normalize_axis(axis, rank));
  Attributes attrs{{"axes", Ints(normalized.begin(), normalized.end())},
                   {"keepdims", std::int64_t{attr_int(node, "keepdims", 1) != 0 ? 1 : 0}}};
  OpType type = OpType::ReduceMean;
  if (node.op_type() == "ReduceSum") {
    type = OpType::ReduceSum;
  } else if (ReductionKind k; reduction_from_onnx_type(node.op_type(), k)) {
    type = OpType::Reduction;
    attrs.set("reduction", std::string(to_string(k)));
  }
  ctx.bind_tensor(node.output(0), ctx.add(type, attrs, {x}, node_name(node)));
}

}  // namespace

static void register_reduce_ops(OnnxImports& table) {
  table["ReduceMean"] = map_reduce;
  table["ReduceSum"] = map_reduce;
  for (std::size_t i = 0; i < reduction_names().size(); ++i)
    table[std::string(reduction_onnx_type(static_cast<ReductionKind>(i)))] = map_reduce;
}

UNITY_REGISTER_ONNX_IMPORTS(register_reduce_ops)

}  // namespace unity::onnxio
