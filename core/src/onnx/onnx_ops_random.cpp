// RandomNormalLike, RandomUniformLike, RandomNormal, RandomUniform and Bernoulli as the Random
// operator (core/src/ops/random.cpp): a VAE's reparameterisation (torch.randn_like), a diffusion
// model's noise, stochastic depth's keep mask (torch.bernoulli). ONNX's `seed` attribute is not
// kept: Unity seeds every random operator from the run's seed, the node and the iteration, so the
// numbers differ from another runtime's but are the same on any number of devices. A shape given
// as an attribute (RandomNormal, RandomUniform) is drawn over an Expand of one zero.
#include <fmt/format.h>

#include "onnx/onnx_op_mapping.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

// The output type: the `dtype` attribute, else `fallback` (the input's type, or float).
std::string output_type(const ::onnx::NodeProto& node, int fallback) {
  const int elem_type = static_cast<int>(attr_int(node, "dtype", fallback));
  const auto t = to_data_type(elem_type);
  if (!t)
    unsupported_use(node, fmt::format("dtype {} is not a type Unity's tensors hold",
                                      elem_type_name(elem_type)));
  return std::string(to_string(*t));
}

Attributes distribution(const ::onnx::NodeProto& node, bool normal) {
  if (normal)
    return {{"distribution", std::string("normal")},
            {"mean", attr_float(node, "mean", 0.0)},
            {"scale", attr_float(node, "scale", 1.0)}};
  return {{"distribution", std::string("uniform")},
          {"low", attr_float(node, "low", 0.0)},
          {"high", attr_float(node, "high", 1.0)}};
}

void emit_random(ImportContext& ctx, const ::onnx::NodeProto& node, Attributes attrs,
                 TensorRef like, const std::string& dtype) {
  attrs.set("dtype", dtype);
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Random, std::move(attrs), {like}, node_name(node)));
}

void map_random_like(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const bool normal = node.op_type() == "RandomNormalLike";
  const std::string& input = node.input(0);
  emit_random(ctx, node, distribution(node, normal), ctx.tensor(input),
              output_type(node, ctx.elem_type(input)));
}

void map_random(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const bool normal = node.op_type() == "RandomNormal";
  const auto shape = attr_ints(node, "shape");
  if (!shape) unsupported_use(node, "the shape attribute is missing");
  for (std::int64_t s : *shape)
    if (s < 1)
      unsupported_use(node, fmt::format("shape {} has a size below 1", format_dims(*shape)));
  const Ints ones(shape->size(), 1);
  TensorRef like = ctx.tensor(
      ctx.fresh_constant(node_name(node) + ".zero", ConstTensor::from_doubles({0.0}, ones)));
  if (*shape != ones)
    like = ctx.add(OpType::Expand, {{"shape", *shape}}, {like}, node_name(node) + ".shape");
  emit_random(ctx, node, distribution(node, normal), like,
              output_type(node, ::onnx::TensorProto::FLOAT));
}

void map_bernoulli(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& input = node.input(0);
  if (is_integer_elem_type(ctx.elem_type(input)))
    unsupported_use(node, fmt::format("the probabilities '{}' are not floating-point", input));
  emit_random(ctx, node, {{"distribution", std::string("bernoulli")}}, ctx.tensor(input),
              output_type(node, ctx.elem_type(input)));
}

}  // namespace

static void register_random_ops(OnnxImports& table) {
  table["RandomNormalLike"] = map_random_like;
  table["RandomUniformLike"] = map_random_like;
  table["RandomNormal"] = map_random;
  table["RandomUniform"] = map_random;
  table["Bernoulli"] = map_bernoulli;
}

UNITY_REGISTER_ONNX_IMPORTS(register_random_ops)

}  // namespace unity::onnxio
