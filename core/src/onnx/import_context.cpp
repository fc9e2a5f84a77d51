#include "onnx/import_context.h"

#include <fmt/format.h>

#include <utility>

#include "unity/core/errors.h"

namespace unity::onnxio {

const ImportContext::Value& ImportContext::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    throw InputError(fmt::format("ONNX value '{}' is used before it is produced", name));
  }
  return it->second;
}

ImportContext::Value& ImportContext::value(const std::string& name) {
  return const_cast<Value&>(std::as_const(*this).value(name));
}

bool ImportContext::is_constant(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && !it->second.tensor;
}

bool ImportContext::is_scalar_constant(const std::string& value) {
  return is_constant(value) && product(dims(value)) == 1;
}

bool ImportContext::is_parameter(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && !it->second.tensor && it->second.parameter;
}

bool ImportContext::is_tensor(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second.tensor.has_value();
}

const ConstTensor& ImportContext::constant(const std::string& name) {
  Value& v = value(name);
  if (v.tensor) {
    throw InputError(
        fmt::format("'{}' must be a constant, but it is computed from the model's inputs", name));
  }
  if (!v.constant) v.constant = read_tensor(*v.initializer);
  return *v.constant;
}

std::vector<std::int64_t> ImportContext::dims(const std::string& name) const {
  const Value& v = value(name);
  return v.tensor ? graph_.shape(*v.tensor).sizes() : v.dims;
}

int ImportContext::elem_type(const std::string& name) const {
  const Value& v = value(name);
  if (!v.tensor) return v.elem_type;
  switch (graph_.shape(*v.tensor).dtype) {
    case DataType::Float32:
      return ::onnx::TensorProto::FLOAT;
    case DataType::Float16:
      return ::onnx::TensorProto::FLOAT16;
    case DataType::BFloat16:
      return ::onnx::TensorProto::BFLOAT16;
    case DataType::Int32:
      return ::onnx::TensorProto::INT32;
    case DataType::Int64:
      return ::onnx::TensorProto::INT64;
    case DataType::Bool:
      return ::onnx::TensorProto::BOOL;
    case DataType::Int8:
      return ::onnx::TensorProto::INT8;
    case DataType::UInt8:
      return ::onnx::TensorProto::UINT8;
    case DataType::Int16:
      return ::onnx::TensorProto::INT16;
    case DataType::UInt16:
      return ::onnx::TensorProto::UINT16;
    case DataType::UInt32:
      return ::onnx::TensorProto::UINT32;
    case DataType::UInt64:
      return ::onnx::TensorProto::UINT64;
  }
  return ::onnx::TensorProto::FLOAT;
}

TensorRef ImportContext::tensor(const std::string& name) {
  const Value& v = value(name);
  if (v.tensor) return *v.tensor;
  return weight(name, v.dims);
}

TensorRef ImportContext::weight(const std::string& name, const std::vector<std::int64_t>& dims) {
  const Value& v = value(name);
  if (v.tensor) return *v.tensor;
  if (product(dims) != product(v.dims)) {
    throw InputError(fmt::format("constant '{}' of shape {} cannot be used with shape {}", name,
                                 format_dims(v.dims), format_dims(dims)));
  }
  auto key = std::make_pair(name, dims);
  if (auto it = weights_.find(key); it != weights_.end()) return it->second;
  const auto dtype = to_data_type(v.elem_type);
  if (!dtype) {
    throw InputError(
        fmt::format("constant '{}' has element type {}, which Unity cannot hold in a tensor", name,
                    elem_type_name(v.elem_type)));
  }
  const bool parameter = v.parameter;
  TensorRef ref = parameter ? graph_.add_weight(name, dims, *dtype)
                            : graph_.add_constant(name, dims, *dtype, values_of(constant(name)));
  weights_.emplace(std::move(key), ref);
  return ref;
}

std::shared_ptr<const TensorValues> ImportContext::values_of(const ConstTensor& c) {
  if (c.is_integer()) return TensorValues::of_integers(c.ints);
  return TensorValues::of_floats(std::vector<float>(c.floats.begin(), c.floats.end()));
}

TensorRef ImportContext::transposed_weight(const std::string& name) {
  const Value& v = value(name);
  if (v.tensor || v.dims.size() != 2) {
    throw InputError(
        fmt::format("'{}' must be a 2-D constant to be used as a transposed weight", name));
  }
  if (auto it = transposed_weights_.find(name); it != transposed_weights_.end()) return it->second;
  TensorRef ref;
  if (v.parameter) {
    // A parameter's values are drawn anew: its transpose is the same parameter.
    ref = weight(name, {v.dims[1], v.dims[0]});
  } else {
    const ConstTensor& c = constant(name);
    ConstTensor t = c;
    t.dims = {v.dims[1], v.dims[0]};
    for (std::int64_t i = 0; i < v.dims[0]; ++i)
      for (std::int64_t j = 0; j < v.dims[1]; ++j) {
        const std::int64_t from = i * v.dims[1] + j, to = j * v.dims[0] + i;
        if (c.is_integer())
          t.ints[static_cast<std::size_t>(to)] = c.ints[static_cast<std::size_t>(from)];
        else
          t.floats[static_cast<std::size_t>(to)] = c.floats[static_cast<std::size_t>(from)];
      }
    ref = tensor(fresh_constant(name + ".T", std::move(t)));
  }
  transposed_weights_.emplace(name, ref);
  return ref;
}

void ImportContext::bind_tensor(const std::string& name, TensorRef t) {
  Value v;
  v.tensor = t;
  values_[name] = std::move(v);
}

void ImportContext::bind_constant(const std::string& name, ConstTensor constant, bool parameter) {
  Value v;
  v.parameter = parameter && !constant.is_integer();
  v.dims = constant.dims;
  v.elem_type = constant.elem_type;
  v.constant = std::move(constant);
  values_[name] = std::move(v);
}

std::string ImportContext::fresh_constant(const std::string& base, ConstTensor constant) {
  std::string name = fresh_name(base);
  bind_constant(name, std::move(constant));
  return name;
}

void ImportContext::bind_initializer(const std::string& name, const ::onnx::TensorProto* init,
                                     bool initializer) {
  Value v;
  v.initializer = init;
  v.dims = tensor_dims(*init);
  v.elem_type = init->data_type();
  const int t = v.elem_type;
  v.parameter =
      initializer && (t == ::onnx::TensorProto::FLOAT || t == ::onnx::TensorProto::FLOAT16 ||
                      t == ::onnx::TensorProto::BFLOAT16 || t == ::onnx::TensorProto::DOUBLE);
  values_[name] = std::move(v);
}

void ImportContext::alias(const std::string& to, const std::string& from) {
  Value copy = value(from);
  values_[to] = std::move(copy);
}

void ImportContext::bind_sequence(const std::string& name, std::vector<std::string> elements) {
  sequences_[name] = std::move(elements);
}

const std::vector<std::string>& ImportContext::sequence(const std::string& name) const {
  auto it = sequences_.find(name);
  if (it == sequences_.end()) {
    throw InputError(fmt::format("ONNX value '{}' is {}, where a sequence is expected", name,
                                 known(name) ? "a tensor" : "used before it is produced"));
  }
  return it->second;
}

std::string ImportContext::fresh_name(const std::string& base) {
  std::string name;
  do {
    name = fmt::format("{}#{}", base, ++fresh_count_);
  } while (known(name) || model_.producer(name) >= 0 || model_.initializer(name));
  return name;
}

NodeId ImportContext::add_node(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
                               const std::string& name) {
  return graph_.add(Operator{type, std::move(attrs), name}, std::move(inputs));
}

TensorRef ImportContext::add(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
                             const std::string& name) {
  return {add_node(type, std::move(attrs), std::move(inputs), name), 0};
}

TensorRef ImportContext::reshape(TensorRef x, const std::vector<std::int64_t>& target,
                                 const std::string& name) {
  if (sizes(x) == target) return x;
  return add(OpType::Reshape, {{"shape", target}}, {x}, name);
}

TensorRef ImportContext::transpose(TensorRef x, const std::vector<std::int64_t>& perm,
                                   const std::string& name) {
  for (std::size_t d = 0; d < perm.size(); ++d)
    if (perm[d] != static_cast<std::int64_t>(d))
      return add(OpType::Transpose, {{"perm", perm}}, {x}, name);
  return x;
}

TensorRef ImportContext::slice(TensorRef x, int axis, std::int64_t start, std::int64_t end,
                               const std::string& name) {
  const std::int64_t size = sizes(x).at(static_cast<std::size_t>(axis));
  if (start == 0 && end == size) return x;
  if (start >= end) {
    throw InputError(
        fmt::format("'{}' takes an empty slice [{}, {}) of axis {}", name, start, end, axis));
  }
  std::vector<std::int64_t> pieces;
  int piece = 0;
  if (start > 0) {
    pieces.push_back(start);
    piece = 1;
  }
  pieces.push_back(end - start);
  if (end < size) pieces.push_back(size - end);
  const NodeId split =
      add_node(OpType::Split, {{"axis", std::int64_t{axis}}, {"sizes", pieces}}, {x}, name);
  slices_.push_back({split, x, axis, start, end, piece, name});
  return {split, piece};
}

}  // namespace unity::onnxio
