#include "onnx/onnx_model_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>

#include <onnx/defs/schema.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/half_precision.h"

namespace unity::onnxio {
namespace {

const std::vector<ValueUse> kNoUses;
const std::string kAbsent;

// Bytes per element in raw_data for the element types we read.
int raw_element_size(int elem_type) {
  switch (elem_type) {
    case ::onnx::TensorProto_DataType_FLOAT:
    case ::onnx::TensorProto_DataType_INT32:
    case ::onnx::TensorProto_DataType_UINT32:
      return 4;
    case ::onnx::TensorProto_DataType_DOUBLE:
    case ::onnx::TensorProto_DataType_INT64:
    case ::onnx::TensorProto_DataType_UINT64:
      return 8;
    case ::onnx::TensorProto_DataType_FLOAT16:
    case ::onnx::TensorProto_DataType_BFLOAT16:
    case ::onnx::TensorProto_DataType_INT16:
    case ::onnx::TensorProto_DataType_UINT16:
      return 2;
    case ::onnx::TensorProto_DataType_INT8:
    case ::onnx::TensorProto_DataType_UINT8:
    case ::onnx::TensorProto_DataType_BOOL:
      return 1;
    default:
      return 0;
  }
}

template <typename T>
T load_raw(const std::string& raw, std::size_t index) {
  T value;
  std::memcpy(&value, raw.data() + index * sizeof(T), sizeof(T));
  return value;
}

// One element of raw_data, widened; the caller knows from the element type which member applies.
void read_raw_element(const std::string& raw, int elem_type, std::size_t i, ConstTensor& out) {
  using TP = ::onnx::TensorProto;
  switch (elem_type) {
    case TP::FLOAT:
      out.floats.push_back(load_raw<float>(raw, i));
      break;
    case TP::DOUBLE:
      out.floats.push_back(load_raw<double>(raw, i));
      break;
    case TP::FLOAT16:
      out.floats.push_back(half_to_float(load_raw<std::uint16_t>(raw, i)));
      break;
    case TP::BFLOAT16:
      out.floats.push_back(bfloat16_to_float(load_raw<std::uint16_t>(raw, i)));
      break;
    case TP::INT64:
      out.ints.push_back(load_raw<std::int64_t>(raw, i));
      break;
    case TP::UINT64:
      out.ints.push_back(static_cast<std::int64_t>(load_raw<std::uint64_t>(raw, i)));
      break;
    case TP::INT32:
      out.ints.push_back(load_raw<std::int32_t>(raw, i));
      break;
    case TP::UINT32:
      out.ints.push_back(load_raw<std::uint32_t>(raw, i));
      break;
    case TP::INT16:
      out.ints.push_back(load_raw<std::int16_t>(raw, i));
      break;
    case TP::UINT16:
      out.ints.push_back(load_raw<std::uint16_t>(raw, i));
      break;
    case TP::INT8:
      out.ints.push_back(load_raw<std::int8_t>(raw, i));
      break;
    case TP::UINT8:
    case TP::BOOL:
      out.ints.push_back(load_raw<std::uint8_t>(raw, i));
      break;
    default:
      break;
  }
}

// The importer reads a node's required inputs and outputs by position: a file whose node has fewer
// than the operator's schema requires (which ONNX's checker rejects) is refused here, before any of
// them is read past the end of its list.
void check_arity(const ::onnx::NodeProto& node, std::int64_t opset,
                 const std::filesystem::path& path) {
  if (!is_default_domain(node)) return;  // reject_unsupported_ops names these
  const auto* schema = ::onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(std::min<std::int64_t>(opset, 1 << 30)));
  if (!schema) return;  // not an ONNX operator at this opset: unsupported, named later
  if (node.input_size() < schema->min_input() || node.output_size() < schema->min_output())
    throw InputError(fmt::format(
        "'{}': {} has {} inputs and {} outputs, but {} takes at least {} and {} (opset {})",
        path.string(), describe_node(node), node.input_size(), node.output_size(), node.op_type(),
        schema->min_input(), schema->min_output(), opset));
}

}  // namespace

OnnxModel::OnnxModel(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot open ONNX file '{}'", path.string()));
  if (!model_.ParseFromIstream(&in) || !model_.has_graph() ||
      (model_.graph().node_size() == 0 && model_.graph().input_size() == 0)) {
    throw InputError(fmt::format(
        "'{}' is not an ONNX model (it does not parse as an ONNX ModelProto)", path.string()));
  }
  for (const auto& opset : model_.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
  }
  const auto& g = model_.graph();
  for (const auto& init : g.initializer()) initializers_[init.name()] = &init;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    check_arity(n, opset_, path);
    for (const auto& out : n.output()) {
      if (!out.empty()) producers_[out] = i;
    }
    for (int slot = 0; slot < n.input_size(); ++slot) {
      if (!n.input(slot).empty()) consumers_[n.input(slot)].push_back({i, slot});
    }
  }
  for (const auto& out : g.output()) outputs_.insert(out.name());
}

const ::onnx::TensorProto* OnnxModel::initializer(const std::string& name) const {
  auto it = initializers_.find(name);
  return it == initializers_.end() ? nullptr : it->second;
}

int OnnxModel::producer(const std::string& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? -1 : it->second;
}

const std::vector<ValueUse>& OnnxModel::consumers(const std::string& value) const {
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNoUses : it->second;
}

std::vector<const ::onnx::ValueInfoProto*> OnnxModel::real_inputs() const {
  std::vector<const ::onnx::ValueInfoProto*> inputs;
  for (const auto& in : graph().input()) {
    if (!initializers_.count(in.name())) inputs.push_back(&in);
  }
  return inputs;
}

int OnnxModel::sole_consumer(const std::string& value) const {
  const auto& uses = consumers(value);
  if (uses.size() != 1 || is_graph_output(value)) return -1;
  return uses.front().node;
}

std::optional<ConstTensor> OnnxModel::static_value(const std::string& value) const {
  std::string name = value;
  for (;;) {
    if (const auto* init = initializer(name)) return read_tensor(*init);
    const int p = producer(name);
    if (p < 0) return std::nullopt;
    const auto& n = node(p);
    if (!is_default_domain(n)) return std::nullopt;
    if (n.op_type() == "Identity") {
      name = n.input(0);
      continue;
    }
    if (n.op_type() != "Constant") return std::nullopt;
    if (const auto* t = find_attribute(n, "value")) return read_tensor(t->t());
    if (const auto* f = find_attribute(n, "value_float"))
      return ConstTensor::from_doubles({f->f()}, {});
    if (const auto* i = find_attribute(n, "value_int")) return ConstTensor::from_ints({i->i()}, {});
    return std::nullopt;
  }
}

std::optional<std::vector<std::int64_t>> OnnxModel::static_dims(const std::string& value) const {
  std::string name = value;
  for (;;) {
    if (const auto* init = initializer(name)) return tensor_dims(*init);
    const int p = producer(name);
    if (p < 0 || !is_default_domain(node(p))) return std::nullopt;
    if (node(p).op_type() == "Identity") {
      name = node(p).input(0);
      continue;
    }
    if (node(p).op_type() != "Constant") return std::nullopt;
    if (const auto* t = find_attribute(node(p), "value")) return tensor_dims(t->t());
    return std::vector<std::int64_t>{};
  }
}

const ::onnx::TensorProto* OnnxModel::static_tensor(const std::string& value) const {
  std::string name = value;
  for (;;) {
    if (const auto* init = initializer(name)) return init;
    const int p = producer(name);
    if (p < 0 || !is_default_domain(node(p))) return nullptr;
    if (node(p).op_type() == "Identity") {
      name = node(p).input(0);
      continue;
    }
    if (node(p).op_type() != "Constant") return nullptr;
    const auto* t = find_attribute(node(p), "value");
    return t ? &t->t() : nullptr;
  }
}

std::vector<std::int64_t> tensor_dims(const ::onnx::TensorProto& tensor) {
  std::vector<std::int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  for (std::int64_t d : dims)
    if (d < 0)
      throw InputError(
          fmt::format("tensor '{}' has a negative dimension {}", tensor.name(), format_dims(dims)));
  return dims;
}

ConstTensor read_tensor(const ::onnx::TensorProto& tensor) {
  using TP = ::onnx::TensorProto;
  ConstTensor out;
  out.dims = tensor_dims(tensor);
  out.elem_type = tensor.data_type();
  if (tensor.data_location() == TP::EXTERNAL) {
    throw InputError(fmt::format(
        "tensor '{}' keeps its data in an external file; its values are needed to fold constants",
        tensor.name()));
  }
  const int elem_size = raw_element_size(out.elem_type);
  if (elem_size == 0) {
    throw InputError(fmt::format("tensor '{}' has element type {}, which Unity cannot read",
                                 tensor.name(), elem_type_name(out.elem_type)));
  }
  const auto n = static_cast<std::size_t>(out.numel());
  if (tensor.has_raw_data()) {
    if (n > tensor.raw_data().size() ||
        tensor.raw_data().size() != n * static_cast<std::size_t>(elem_size)) {
      throw InputError(fmt::format("tensor '{}' has {} bytes of data for shape {}", tensor.name(),
                                   tensor.raw_data().size(), format_dims(out.dims)));
    }
    // Reserved only now: the shape alone, before its data is checked, may ask for any size.
    if (out.is_integer())
      out.ints.reserve(n);
    else
      out.floats.reserve(n);
    for (std::size_t i = 0; i < n; ++i) read_raw_element(tensor.raw_data(), out.elem_type, i, out);
    return out;
  }
  switch (out.elem_type) {
    case TP::FLOAT:
      out.floats.assign(tensor.float_data().begin(), tensor.float_data().end());
      break;
    case TP::DOUBLE:
      out.floats.assign(tensor.double_data().begin(), tensor.double_data().end());
      break;
    case TP::FLOAT16:
      for (int bits : tensor.int32_data())
        out.floats.push_back(half_to_float(static_cast<std::uint16_t>(bits)));
      break;
    case TP::BFLOAT16:
      for (int bits : tensor.int32_data())
        out.floats.push_back(bfloat16_to_float(static_cast<std::uint16_t>(bits)));
      break;
    case TP::INT64:
      out.ints.assign(tensor.int64_data().begin(), tensor.int64_data().end());
      break;
    case TP::UINT64:
    case TP::UINT32:
      for (auto v : tensor.uint64_data()) out.ints.push_back(static_cast<std::int64_t>(v));
      break;
    default:
      out.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
      break;
  }
  const std::size_t have = out.is_integer() ? out.ints.size() : out.floats.size();
  if (have != n) {
    throw InputError(fmt::format("tensor '{}' has {} values for shape {}", tensor.name(), have,
                                 format_dims(out.dims)));
  }
  return out;
}

std::optional<DataType> to_data_type(int onnx_elem_type) {
  using TP = ::onnx::TensorProto;
  switch (onnx_elem_type) {
    // Doubles are rare in models (mostly stray constants); they train as float32 here.
    case TP::FLOAT:
    case TP::DOUBLE:
      return DataType::Float32;
    case TP::FLOAT16:
      return DataType::Float16;
    case TP::BFLOAT16:
      return DataType::BFloat16;
    case TP::INT32:
      return DataType::Int32;
    case TP::INT64:
      return DataType::Int64;
    case TP::BOOL:
      return DataType::Bool;
    case TP::INT8:
      return DataType::Int8;
    case TP::UINT8:
      return DataType::UInt8;
    case TP::INT16:
      return DataType::Int16;
    case TP::UINT16:
      return DataType::UInt16;
    case TP::UINT32:
      return DataType::UInt32;
    case TP::UINT64:
      return DataType::UInt64;
    default:
      return std::nullopt;
  }
}

std::string elem_type_name(int onnx_elem_type) {
  if (::onnx::TensorProto_DataType_IsValid(onnx_elem_type)) {
    return ::onnx::TensorProto_DataType_Name(
        static_cast<::onnx::TensorProto_DataType>(onnx_elem_type));
  }
  return fmt::format("#{}", onnx_elem_type);
}

const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node,
                                             const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t attr_int(const ::onnx::NodeProto& node, const std::string& name,
                      std::int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->i() : fallback;
}

double attr_float(const ::onnx::NodeProto& node, const std::string& name, double fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->f() : fallback;
}

std::string attr_string(const ::onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<std::int64_t>> attr_ints(const ::onnx::NodeProto& node,
                                                   const std::string& name) {
  const auto* a = find_attribute(node, name);
  if (!a) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::string node_name(const ::onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  // An output left out is an empty name (LSTM's Y when only Y_h is read): the first one given.
  for (const auto& out : node.output())
    if (!out.empty()) return out;
  return node.op_type();
}

std::string describe_node(const ::onnx::NodeProto& node) {
  return fmt::format("{} (node '{}')", node.op_type(), node_name(node));
}

bool is_default_domain(const ::onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

const std::string& input_name(const ::onnx::NodeProto& node, int slot) {
  return slot < node.input_size() ? node.input(slot) : kAbsent;
}

}  // namespace unity::onnxio
