// Max, Min, Sum, Mean, PRelu, Mod and Pow (a tensor exponent) of activations: the Arithmetic
// operator (unity/core/ops/arithmetic.h). On constants the importer folds Max, Min, Mod and Pow
// instead (constant_folding.cpp). A scalar constant operand becomes the attribute `scalar` (the
// last operand; the first one found, for the variadic functions), as Compare's does; a Pow with a
// scalar constant exponent stays our Pow, and a PRelu with a scalar constant slope that is not a
// trained parameter a LeakyRelu. Other constant operands (a PRelu's slope) become Weights.
#include <fmt/format.h>

#include <cctype>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

// The node's inputs as Arithmetic's operands: `function` of them, broadcast to ONNX's shape.
void emit(ImportContext& ctx, const ::onnx::NodeProto& node, const std::string& function) {
  const bool variadic =
      function == "max" || function == "min" || function == "sum" || function == "mean";
  const std::string name = node_name(node);
  Attributes attrs{{"function", function}};
  std::vector<TensorRef> inputs;
  Ints expected;
  for (int slot = 0; slot < node.input_size(); ++slot) {
    const std::string& value = node.input(slot);
    if (value.empty()) continue;
    expected = broadcast_dims(expected, ctx.dims(value));
    // A scalar constant: the last operand (Mod's divisor, Pow's exponent), or any one of a
    // variadic function's, as long as another operand is a tensor.
    const bool last = slot == node.input_size() - 1;
    if (ctx.is_scalar_constant(value) && !ctx.is_parameter(value) && !attrs.has("scalar") &&
        (variadic ? node.input_size() > 1 : (last && slot > 0))) {
      attrs.set("scalar", ctx.constant(value).scalar());
      continue;
    }
    inputs.push_back(ctx.tensor(value));
  }
  if (inputs.empty())
    unsupported_use(node, "every operand is a scalar constant, and none is computed");
  const TensorRef out = ctx.add(OpType::Arithmetic, std::move(attrs), inputs, name);
  ctx.bind_tensor(node.output(0), ctx.reshape(out, expected, name + ".broadcast"));
}

void map_variadic(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  std::string function = node.op_type();
  for (char& ch : function) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  emit(ctx, node, function);
}

void map_prelu(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& slope = node.input(1);
  if (ctx.is_scalar_constant(slope) && !ctx.is_parameter(slope)) {
    ctx.bind_tensor(node.output(0),
                    ctx.add(OpType::LeakyRelu, {{"alpha", ctx.constant(slope).scalar()}},
                            {ctx.tensor(node.input(0))}, node_name(node)));
    return;
  }
  emit(ctx, node, "prelu");
}

void map_mod(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  emit(ctx, node, attr_int(node, "fmod", 0) != 0 ? "fmod" : "mod");
}

}  // namespace

void emit_tensor_pow(ImportContext& ctx, const ::onnx::NodeProto& node) { emit(ctx, node, "pow"); }

static void register_arithmetic_ops(OnnxImports& table) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) table[op] = map_variadic;
  table["PRelu"] = map_prelu;
  table["Mod"] = map_mod;
}

UNITY_REGISTER_ONNX_IMPORTS(register_arithmetic_ops)

}  // namespace unity::onnxio
