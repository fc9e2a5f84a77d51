#include "attribute_schema.h"

#include <map>

#include "unity/core/ops/arithmetic.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/reduction.h"
#include "unity/core/ops/resize.h"

namespace unity::rules::spec {
namespace {

using K = AttrKind;
const std::vector<std::string> kActivationNames = {"none", "relu", "gelu", "sigmoid", "tanh"};

AttrSlot i(std::string n) { return {std::move(n), K::Int, {}, std::nullopt, ""}; }
AttrSlot i(std::string n, std::int64_t def) {
  return {std::move(n), K::Int, {}, AttrValue{def}, ""};
}
AttrSlot r(std::string n) { return {std::move(n), K::Real, {}, std::nullopt, ""}; }
AttrSlot r(std::string n, double def) { return {std::move(n), K::Real, {}, AttrValue{def}, ""}; }
AttrSlot l(std::string n) { return {std::move(n), K::List, {}, std::nullopt, ""}; }
AttrSlot l(std::string n, std::vector<std::int64_t> def) {
  return {std::move(n), K::List, {}, AttrValue{std::move(def)}, ""};
}
AttrSlot e(std::string n, std::vector<std::string> values, std::optional<std::string> def) {
  AttrSlot s{std::move(n), K::Enum, std::move(values), std::nullopt, ""};
  if (def) s.default_value = AttrValue{*def};
  return s;
}

AttrKind slot_kind(AttributeDeclaration::Kind k) {
  switch (k) {
    case AttributeDeclaration::Kind::Int:
      return K::Int;
    case AttributeDeclaration::Kind::Real:
      return K::Real;
    case AttributeDeclaration::Kind::List:
      return K::List;
    case AttributeDeclaration::Kind::Enum:
      return K::Enum;
  }
  return K::Int;
}

std::map<OpType, std::vector<AttrSlot>> make_schemas() {
  std::map<OpType, std::vector<AttrSlot>> m;
  const auto act = e("activation", kActivationNames, "none");
  m[OpType::Linear] = {i("out_features"), act};
  AttrSlot pool_stride = l("stride");
  pool_stride.default_from = "kernel";
  m[OpType::Conv2D] = {i("out_channels"),
                       l("kernel"),
                       l("stride", {1, 1}),
                       l("padding", {0, 0}),
                       l("dilation", {1, 1}),
                       i("groups", 1),
                       act};
  m[OpType::Pool2D] = {e("pool", {"max", "avg"}, std::nullopt), l("kernel"), pool_stride,
                       l("padding", {0, 0})};
  // Defaults of one entry: one entry applies to every spatial dim (1 to 3 of them).
  m[OpType::ConvTranspose] = {i("out_channels"), l("kernel"),        l("stride", {1}),
                              l("padding", {0}), l("dilation", {1}), l("output_padding", {0}),
                              i("groups", 1)};
  m[OpType::BatchNorm] = {r("epsilon", 1e-5), act};
  m[OpType::LayerNorm] = {i("normalized_dims", 1), r("epsilon", 1e-5)};
  m[OpType::MultiHeadAttention] = {i("num_heads"), i("fused", 0)};
  m[OpType::Embedding] = {i("num_entries"), i("embedding_dim")};
  // SwiGLU with five inputs, GELU with four: random_instances picks the one the arity gives.
  m[OpType::Experts] = {i("top_k"), e("mlp", {"swiglu", "gelu"}, "swiglu")};
  // Eight inputs with query compression, six without: random_instances picks by the arity.
  m[OpType::LatentAttention] = {i("num_heads"),       i("qk_nope_head_dim"), i("qk_rope_head_dim"),
                                i("v_head_dim"),      i("causal", 0),        i("fused", 0),
                                r("rotary_base", 1e4)};
  m[OpType::EmbeddingBag] = {i("num_entries"), i("embedding_dim"),
                             e("aggregate", {"sum", "mean"}, "sum")};
  m[OpType::ScalarAdd] = {r("scalar")};
  m[OpType::ScalarMul] = {r("scalar")};
  m[OpType::Pow] = {r("scalar")};
  m[OpType::Dropout] = {r("rate", 0.0)};
  AttrSlot pieces = i("pieces", 1);
  pieces.closed = true;
  m[OpType::Concat] = {i("axis"), pieces};
  // Closed like pieces: a rule that does not name it means the whole-vocabulary loss.
  AttrSlot vocab_parallel = i("vocab_parallel", 0);
  vocab_parallel.closed = true;
  m[OpType::SoftmaxCrossEntropy] = {vocab_parallel};
  m[OpType::Split] = {i("axis"), l("sizes")};
  m[OpType::Reshape] = {l("shape")};
  m[OpType::Flatten] = {i("axis", 1)};
  m[OpType::Transpose] = {l("perm")};
  m[OpType::Expand] = {l("shape")};
  m[OpType::Softmax] = {i("axis", -1)};
  m[OpType::ReduceSum] = {l("axes"), i("keepdims", 1)};
  m[OpType::Resize] = {l("axes"),
                       l("sizes"),
                       e("mode", resize_mode_names(), "nearest"),
                       e("coordinate_transformation_mode", resize_coordinate_names(), "half_pixel"),
                       e("nearest_mode", resize_nearest_names(), "round_prefer_floor"),
                       r("cubic_coeff_a", -0.75),
                       i("exclude_outside", 0)};
  m[OpType::ReduceMean] = {l("axes"), i("keepdims", 1)};
  m[OpType::Reduction] = {e("reduction", reduction_names(), std::nullopt), l("axes"),
                          i("keepdims", 1)};
  m[OpType::Pad] = {l("pads"), e("mode", {"constant", "reflect", "edge"}, "constant"),
                    r("value", 0.0)};
  m[OpType::GatherND] = {i("batch_dims", 0)};
  m[OpType::ScatterND] = {e("reduction", {"none", "add", "mul"}, "none")};
  // The index operators. ArgMax/ArgMin's keepdims is closed: a rule that leaves it out means 1
  // (the dims kept, which their axioms assume).
  auto closed = [](AttrSlot s) {
    s.closed = true;
    return s;
  };
  m[OpType::TopK] = {i("k"), i("axis", -1), i("largest", 1)};
  m[OpType::GatherElements] = {i("axis", 0)};
  m[OpType::ScatterElements] = {i("axis", 0), e("reduction", {"none", "add"}, "none")};
  m[OpType::OneHot] = {i("depth"), i("axis", -1), r("off_value", 0.0), r("on_value", 1.0)};
  for (auto t : {OpType::ArgMax, OpType::ArgMin})
    m[t] = {i("axis", 0), closed(i("keepdims", 1)), i("select_last_index", 0)};
  // The mask operators. Compare's `scalar` and Where's `x` and `y` stand for a missing input: a
  // rule's pattern names the inputs, so they have no slots.
  m[OpType::Compare] = {e("comparison",
                          {"equal", "less", "greater", "less_or_equal", "greater_or_equal"},
                          std::nullopt)};
  m[OpType::Logical] = {e("logic", {"and", "or", "xor", "not"}, std::nullopt)};
  std::vector<std::string> type_names;
  for (std::string_view n : data_type_names()) type_names.emplace_back(n);
  m[OpType::Cast] = {e("to", type_names, std::nullopt)};
  // Arithmetic's `scalar`, too, stands for a missing (last) operand.
  m[OpType::Arithmetic] = {e("function", arithmetic::function_names(), std::nullopt)};
  for (auto t : {OpType::Partition, OpType::Combine, OpType::Pipeline, OpType::Batch})
    m[t] = {i("dim"), i("degree")};
  for (auto t : {OpType::Replicate, OpType::Reduce, OpType::AllReduce}) m[t] = {i("degree")};
  // Point-wise operators: their real parameters, as their definitions declare them; operators
  // along an axis: the axis.
  for (const OperatorDefinition* d : operator_definitions()) {
    if ((!d->pointwise && !d->along_axis) || m.count(d->info.type)) continue;
    std::vector<AttrSlot> slots;
    if (d->along_axis) slots.push_back(i("axis", -1));
    for (const PointwiseParameter& p : declared_parameters(d->info.type))
      slots.push_back(p.default_value ? r(std::string(p.name), *p.default_value)
                                      : r(std::string(p.name)));
    if (!slots.empty()) m[d->info.type] = std::move(slots);
  }
  // Operators described in their own files: the attributes their definitions declare.
  for (const OperatorDefinition* d : operator_definitions()) {
    if (d->attributes.empty() || m.count(d->info.type)) continue;
    std::vector<AttrSlot> slots;
    for (const AttributeDeclaration& a : d->attributes) {
      AttrSlot s{std::string(a.name), slot_kind(a.kind), {}, a.default_value, ""};
      for (std::string_view c : a.choices) s.enum_values.emplace_back(c);
      slots.push_back(std::move(s));
    }
    m[d->info.type] = std::move(slots);
  }
  return m;
}

}  // namespace

const std::vector<AttrSlot>& attribute_slots(OpType op) {
  static const auto schemas = make_schemas();
  static const std::vector<AttrSlot> none;
  auto it = schemas.find(op);
  return it == schemas.end() ? none : it->second;
}

int slot_index(OpType op, const std::string& name) {
  const auto& slots = attribute_slots(op);
  for (std::size_t s = 0; s < slots.size(); ++s)
    if (slots[s].name == name) return static_cast<int>(s);
  return -1;
}

std::int64_t enum_code(const AttrSlot& slot, const std::string& value) {
  for (std::size_t c = 0; c < slot.enum_values.size(); ++c)
    if (slot.enum_values[c] == value) return static_cast<std::int64_t>(c);
  // Unknown names get distinct codes past the known ones (the operator rejects them anyway).
  return static_cast<std::int64_t>(slot.enum_values.size()) + 1 +
         static_cast<std::int64_t>(std::hash<std::string>{}(value) % 1000);
}

std::string enum_name(const AttrSlot& slot, std::int64_t code) {
  if (code >= 0 && code < static_cast<std::int64_t>(slot.enum_values.size()))
    return slot.enum_values[static_cast<std::size_t>(code)];
  return "unknown";
}

std::vector<std::int64_t> normalized_list(OpType op, const std::string& name,
                                          std::vector<std::int64_t> value) {
  const bool pair =
      (op == OpType::Conv2D || op == OpType::Pool2D) &&
      (name == "kernel" || name == "stride" || name == "padding" || name == "dilation");
  if (pair && value.size() == 1) value.push_back(value[0]);
  return value;
}

}  // namespace unity::rules::spec
