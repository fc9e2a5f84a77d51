#include "onnx/constant_folding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using TP = ::onnx::TensorProto;

const std::set<std::string_view> kConstantOnlyOps = {
    "Constant", "Shape", "Size", "ConstantOfShape", "Range", "Equal", "Less", "Greater", "Where",
    "Not", "And", "Or", "Floor", "Ceil", "Abs", "Min", "Max", "Mod", "Expand", "Log"};
const std::set<std::string_view> kAlsoFoldable = {
    "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice", "Reshape", "Flatten", "Transpose",
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Reciprocal", "Exp", "Erf", "Relu",
    "Sigmoid", "Tanh"};

const std::set<std::string_view> kUnaryOps = {
    "Sqrt", "Neg", "Reciprocal", "Floor", "Ceil", "Abs", "Not", "Exp", "Log", "Erf", "Relu",
    "Sigmoid", "Tanh"};

[[noreturn]] void fail(const ::onnx::NodeProto& node, const std::string& what) {
  throw InputError(fmt::format("{}: {}", describe_node(node), what));
}

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<std::size_t>(i)] = strides[static_cast<std::size_t>(i) + 1] * dims[static_cast<std::size_t>(i) + 1];
  }
  return strides;
}

// Flat index into a tensor of `dims` (right-aligned, size-1 dims broadcast) of the element at
// multi-index `index` of the `out` shape.
std::int64_t broadcast_index(const std::vector<std::int64_t>& index, const std::vector<std::int64_t>& dims) {
  const auto strides = strides_of(dims);
  const std::size_t offset = index.size() - dims.size();
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != 1) flat += index[offset + d] * strides[d];
  }
  return flat;
}

// Calls f(multi_index, flat) for every element of a tensor of `dims`, in row-major order.
void for_each_index(const std::vector<std::int64_t>& dims,
                    const std::function<void(const std::vector<std::int64_t>&, std::int64_t)>& f) {
  const std::int64_t n = product(dims);
  std::vector<std::int64_t> index(dims.size(), 0);
  for (std::int64_t flat = 0; flat < n; ++flat) {
    f(index, flat);
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++index[static_cast<std::size_t>(d)] < dims[static_cast<std::size_t>(d)]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
}

ConstTensor empty_like(int elem_type, std::vector<std::int64_t> dims) {
  ConstTensor t;
  t.elem_type = elem_type;
  t.dims = std::move(dims);
  if (t.is_integer()) t.ints.reserve(static_cast<std::size_t>(t.numel()));
  else t.floats.reserve(static_cast<std::size_t>(t.numel()));
  return t;
}

// Appends element `index` of src to dst (same element kind).
void copy_element(const ConstTensor& src, std::int64_t index, ConstTensor& dst) {
  if (dst.is_integer()) dst.ints.push_back(src.as_int(index));
  else dst.floats.push_back(src.as_double(index));
}

ConstTensor gather_elements(const ConstTensor& src, std::vector<std::int64_t> dims,
                            const std::function<std::int64_t(const std::vector<std::int64_t>&)>& source_index) {
  ConstTensor out = empty_like(src.elem_type, dims);
  for_each_index(dims, [&](const std::vector<std::int64_t>& index, std::int64_t) {
    copy_element(src, source_index(index), out);
  });
  return out;
}

std::vector<std::int64_t> axes_of(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
                                  int slot) {
  if (auto attr = attr_ints(node, "axes")) return *attr;
  if (static_cast<int>(in.size()) > slot && in[static_cast<std::size_t>(slot)]) {
    return in[static_cast<std::size_t>(slot)]->to_ints();
  }
  return {};
}

ConstTensor elementwise(const std::vector<const ConstTensor*>& in, int result_type,
                        const std::function<double(const std::vector<double>&)>& float_op,
                        const std::function<std::int64_t(const std::vector<std::int64_t>&)>& int_op) {
  std::vector<std::int64_t> dims = in[0]->dims;
  for (std::size_t i = 1; i < in.size(); ++i) dims = broadcast_dims(dims, in[i]->dims);
  ConstTensor out = empty_like(result_type, dims);
  // Integer maths stays exact when every operand is integral; Where picks among its operands.
  bool all_integer = true;
  for (const auto* t : in) all_integer = all_integer && t->is_integer();
  std::vector<double> fargs(in.size());
  std::vector<std::int64_t> iargs(in.size());
  for_each_index(dims, [&](const std::vector<std::int64_t>& index, std::int64_t) {
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::int64_t src = broadcast_index(index, in[i]->dims);
      if (all_integer) iargs[i] = in[i]->as_int(src);
      else fargs[i] = in[i]->as_double(src);
    }
    if (all_integer) {
      const std::int64_t v = int_op(iargs);
      if (out.is_integer()) out.ints.push_back(v); else out.floats.push_back(static_cast<double>(v));
    } else {
      const double v = float_op(fargs);
      if (out.is_integer()) out.ints.push_back(static_cast<std::int64_t>(v)); else out.floats.push_back(v);
    }
  });
  return out;
}

ConstTensor fold_binary(const ::onnx::NodeProto& node, const ConstTensor& a, const ConstTensor& b) {
  const std::string& op = node.op_type();
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or";
  const int type = compare ? TP::BOOL : a.elem_type;
  std::function<double(double, double)> f;
  std::function<std::int64_t(std::int64_t, std::int64_t)> i;
  if (op == "Add") { f = std::plus<double>(); i = std::plus<std::int64_t>(); }
  else if (op == "Sub") { f = std::minus<double>(); i = std::minus<std::int64_t>(); }
  else if (op == "Mul") { f = std::multiplies<double>(); i = std::multiplies<std::int64_t>(); }
  else if (op == "Div") {
    f = std::divides<double>();
    i = [&node](std::int64_t x, std::int64_t y) {
      if (y == 0) fail(node, "integer division by zero in a constant");
      return x / y;
    };
  } else if (op == "Mod") {
    f = [](double x, double y) { return std::fmod(x, y); };
    i = [&node](std::int64_t x, std::int64_t y) {
      if (y == 0) fail(node, "modulo by zero in a constant");
      return x % y;
    };
  } else if (op == "Pow") {
    f = [](double x, double y) { return std::pow(x, y); };
    i = [](std::int64_t x, std::int64_t y) { return static_cast<std::int64_t>(std::pow(x, y)); };
  } else if (op == "Min") { f = [](double x, double y) { return std::min(x, y); }; i = [](std::int64_t x, std::int64_t y) { return std::min(x, y); }; }
  else if (op == "Max") { f = [](double x, double y) { return std::max(x, y); }; i = [](std::int64_t x, std::int64_t y) { return std::max(x, y); }; }
  else if (op == "Equal") { f = [](double x, double y) { return x == y ? 1.0 : 0.0; }; i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x == y; }; }
  else if (op == "Less") { f = [](double x, double y) { return x < y ? 1.0 : 0.0; }; i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x < y; }; }
  else if (op == "Greater") { f = [](double x, double y) { return x > y ? 1.0 : 0.0; }; i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x > y; }; }
  else if (op == "And") { f = [](double x, double y) { return (x != 0 && y != 0) ? 1.0 : 0.0; }; i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x != 0 && y != 0; }; }
  else { f = [](double x, double y) { return (x != 0 || y != 0) ? 1.0 : 0.0; }; i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x != 0 || y != 0; }; }
  return elementwise({&a, &b}, type, [&](const std::vector<double>& v) { return f(v[0], v[1]); },
                     [&](const std::vector<std::int64_t>& v) { return i(v[0], v[1]); });
}

ConstTensor fold_unary(const ::onnx::NodeProto& node, const ConstTensor& x) {
  const std::string& op = node.op_type();
  std::function<double(double)> f;
  if (op == "Sqrt") f = [](double v) { return std::sqrt(v); };
  else if (op == "Neg") f = [](double v) { return -v; };
  else if (op == "Reciprocal") f = [](double v) { return 1.0 / v; };
  else if (op == "Floor") f = [](double v) { return std::floor(v); };
  else if (op == "Ceil") f = [](double v) { return std::ceil(v); };
  else if (op == "Abs") f = [](double v) { return std::abs(v); };
  else if (op == "Not") f = [](double v) { return v == 0 ? 1.0 : 0.0; };
  else if (op == "Exp") f = [](double v) { return std::exp(v); };
  else if (op == "Log") f = [](double v) { return std::log(v); };
  else if (op == "Erf") f = [](double v) { return std::erf(v); };
  else if (op == "Relu") f = [](double v) { return std::max(v, 0.0); };
  else if (op == "Sigmoid") f = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  else f = [](double v) { return std::tanh(v); };
  // Neg and Abs keep integers exact; the rest are float maths in ONNX anyway.
  const bool exact_int = x.is_integer() && (op == "Neg" || op == "Abs" || op == "Not");
  return elementwise({&x}, x.elem_type, [&](const std::vector<double>& v) { return f(v[0]); },
                     [&](const std::vector<std::int64_t>& v) -> std::int64_t {
                       if (exact_int) return op == "Neg" ? -v[0] : op == "Abs" ? std::abs(v[0]) : v[0] == 0;
                       return static_cast<std::int64_t>(f(static_cast<double>(v[0])));
                     });
}

ConstTensor fold_cast(const ::onnx::NodeProto& node, const ConstTensor& x) {
  const int to = static_cast<int>(attr_int(node, "to", TP::FLOAT));
  ConstTensor out = empty_like(to, x.dims);
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    if (to == TP::BOOL) out.ints.push_back(x.as_double(k) != 0.0);
    else if (out.is_integer()) out.ints.push_back(x.as_int(k));
    else out.floats.push_back(x.as_double(k));
  }
  return out;
}

ConstTensor fold_gather(const ::onnx::NodeProto& node, const ConstTensor& data, const ConstTensor& indices) {
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  const auto data_strides = strides_of(data.dims);
  const auto index_rank = indices.dims.size();
  const auto index_strides = strides_of(indices.dims);
  return gather_elements(data, dims, [&](const std::vector<std::int64_t>& out_index) {
    std::int64_t which = 0;
    for (std::size_t d = 0; d < index_rank; ++d) which += out_index[static_cast<std::size_t>(axis) + d] * index_strides[d];
    std::int64_t pos = indices.as_int(which);
    const std::int64_t extent = data.dims[static_cast<std::size_t>(axis)];
    if (pos < 0) pos += extent;
    if (pos < 0 || pos >= extent) fail(node, fmt::format("index {} out of range for a dim of size {}", pos, extent));
    std::int64_t flat = pos * data_strides[static_cast<std::size_t>(axis)];
    for (int d = 0; d < axis; ++d) flat += out_index[static_cast<std::size_t>(d)] * data_strides[static_cast<std::size_t>(d)];
    for (std::int64_t d = axis + 1; d < rank; ++d) {
      flat += out_index[static_cast<std::size_t>(d - 1) + index_rank] * data_strides[static_cast<std::size_t>(d)];
    }
    return flat;
  });
}

ConstTensor fold_concat(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in) {
  const auto rank = static_cast<std::int64_t>(in.front()->dims.size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  std::vector<std::int64_t> dims = in.front()->dims;
  dims[static_cast<std::size_t>(axis)] = 0;
  for (const auto* t : in) dims[static_cast<std::size_t>(axis)] += t->dims.at(static_cast<std::size_t>(axis));
  ConstTensor out = empty_like(in.front()->elem_type, dims);
  for_each_index(dims, [&](const std::vector<std::int64_t>& index, std::int64_t) {
    std::int64_t pos = index[static_cast<std::size_t>(axis)];
    for (const auto* t : in) {
      const std::int64_t extent = t->dims[static_cast<std::size_t>(axis)];
      if (pos < extent) {
        auto local = index;
        local[static_cast<std::size_t>(axis)] = pos;
        copy_element(*t, broadcast_index(local, t->dims), out);
        return;
      }
      pos -= extent;
    }
  });
  return out;
}

ConstTensor fold_slice(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
                       std::int64_t opset) {
  const ConstTensor& data = *in[0];
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = attr_ints(node, "starts").value_or(std::vector<std::int64_t>{});
    ends = attr_ints(node, "ends").value_or(std::vector<std::int64_t>{});
    axes = attr_ints(node, "axes").value_or(std::vector<std::int64_t>{});
  } else {
    starts = in.at(1)->to_ints();
    ends = in.at(2)->to_ints();
    if (in.size() > 3 && in[3]) axes = in[3]->to_ints();
    if (in.size() > 4 && in[4]) steps = in[4]->to_ints();
  }
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  if (axes.empty()) for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<std::int64_t> begin(data.dims.size(), 0), step(data.dims.size(), 1), dims = data.dims;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
    const std::int64_t extent = data.dims[a];
    if (steps[i] == 0) fail(node, "slice step 0");
    auto clamp = [&](std::int64_t v, bool is_end) {
      if (v < 0) v += extent;
      if (steps[i] > 0) return std::clamp<std::int64_t>(v, 0, extent);
      // Negative steps walk down from start (at most the last element) to end (exclusive, -1 is
      // one before the first element).
      return std::clamp<std::int64_t>(v, is_end ? -1 : 0, extent - 1);
    };
    const std::int64_t s = clamp(starts[i], false), e = clamp(ends[i], true);
    begin[a] = s;
    step[a] = steps[i];
    const std::int64_t span = steps[i] > 0 ? e - s : s - e;
    const std::int64_t magnitude = std::abs(steps[i]);
    dims[a] = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  }
  const auto data_strides = strides_of(data.dims);
  return gather_elements(data, dims, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < index.size(); ++d) flat += (begin[d] + index[d] * step[d]) * data_strides[d];
    return flat;
  });
}

ConstTensor fold_transpose(const ::onnx::NodeProto& node, const ConstTensor& x) {
  std::vector<std::int64_t> perm = attr_ints(node, "perm").value_or(std::vector<std::int64_t>{});
  if (perm.empty()) for (auto d = static_cast<std::int64_t>(x.dims.size()) - 1; d >= 0; --d) perm.push_back(d);
  std::vector<std::int64_t> dims;
  for (auto p : perm) dims.push_back(x.dims.at(static_cast<std::size_t>(p)));
  const auto strides = strides_of(x.dims);
  return gather_elements(x, dims, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < index.size(); ++d) flat += index[d] * strides[static_cast<std::size_t>(perm[d])];
    return flat;
  });
}

ConstTensor reshaped(ConstTensor t, std::vector<std::int64_t> dims) {
  t.dims = std::move(dims);
  return t;
}

}  // namespace

bool is_constant_only_op(std::string_view op) { return kConstantOnlyOps.count(op) != 0; }
bool is_foldable_op(std::string_view op) { return is_constant_only_op(op) || kAlsoFoldable.count(op) != 0; }
bool is_shape_query_op(std::string_view op) { return op == "Shape" || op == "Size"; }

ConstTensor fold_shape_query(const ::onnx::NodeProto& node, const std::vector<std::int64_t>& dims) {
  if (node.op_type() == "Size") return ConstTensor::from_ints({product(dims)}, {});
  const auto rank = static_cast<std::int64_t>(dims.size());
  auto clamp = [rank](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const std::int64_t start = clamp(attr_int(node, "start", 0));
  const std::int64_t end = clamp(attr_int(node, "end", rank));
  std::vector<std::int64_t> values(dims.begin() + start, dims.begin() + std::max(start, end));
  const auto n = static_cast<std::int64_t>(values.size());
  return ConstTensor::from_ints(std::move(values), {n});
}

std::optional<std::vector<ConstTensor>> fold_node(const ::onnx::NodeProto& node,
                                                  const std::vector<const ConstTensor*>& in,
                                                  std::int64_t opset) {
  const std::string& op = node.op_type();
  auto need = [&](std::size_t count) {
    if (in.size() < count || std::any_of(in.begin(), in.begin() + static_cast<long>(count),
                                         [](const ConstTensor* t) { return t == nullptr; })) {
      fail(node, fmt::format("expects {} inputs", count));
    }
  };
  ConstTensor out;
  if (op == "Constant") {
    if (const auto* t = find_attribute(node, "value")) out = read_tensor(t->t());
    else if (const auto* f = find_attribute(node, "value_float")) out = ConstTensor::from_doubles({f->f()}, {});
    else if (const auto* fs = find_attribute(node, "value_floats")) {
      out = ConstTensor::from_doubles({fs->floats().begin(), fs->floats().end()}, {fs->floats_size()});
    } else if (const auto* i = find_attribute(node, "value_int")) out = ConstTensor::from_ints({i->i()}, {});
    else if (const auto* is = find_attribute(node, "value_ints")) {
      out = ConstTensor::from_ints({is->ints().begin(), is->ints().end()}, {is->ints_size()});
    } else {
      fail(node, "only tensor, float and int constants are supported");
    }
  } else if (op == "Identity") {
    need(1); out = *in[0];
  } else if (op == "Cast") {
    need(1); out = fold_cast(node, *in[0]);
  } else if (op == "Gather") {
    need(2); out = fold_gather(node, *in[0], *in[1]);
  } else if (op == "Unsqueeze") {
    need(1); out = reshaped(*in[0], unsqueeze_dims(in[0]->dims, axes_of(node, in, 1)));
  } else if (op == "Squeeze") {
    need(1); out = reshaped(*in[0], squeeze_dims(in[0]->dims, axes_of(node, in, 1)));
  } else if (op == "Concat") {
    need(in.size()); out = fold_concat(node, in);
  } else if (op == "Slice") {
    need(opset < 10 ? 1 : 3); out = fold_slice(node, in, opset);
  } else if (op == "Reshape") {
    need(2);
    out = reshaped(*in[0], resolve_reshape(in[0]->dims, in[1]->to_ints(), attr_int(node, "allowzero", 0) != 0));
  } else if (op == "Flatten") {
    need(1);
    const auto rank = static_cast<std::int64_t>(in[0]->dims.size());
    const auto axis = static_cast<std::int64_t>(normalize_axis(attr_int(node, "axis", 1), rank + 1));
    const std::vector<std::int64_t> head(in[0]->dims.begin(), in[0]->dims.begin() + axis);
    out = reshaped(*in[0], {product(head), in[0]->numel() / std::max<std::int64_t>(product(head), 1)});
  } else if (op == "Transpose") {
    need(1); out = fold_transpose(node, *in[0]);
  } else if (op == "Expand") {
    need(2);
    const auto dims = broadcast_dims(in[0]->dims, in[1]->to_ints());
    if (product(dims) > kMaxFoldElements) return std::nullopt;
    out = gather_elements(*in[0], dims, [&](const std::vector<std::int64_t>& index) {
      return broadcast_index(index, in[0]->dims);
    });
  } else if (op == "ConstantOfShape") {
    need(1);
    const auto dims = in[0]->to_ints();
    if (product(dims) > kMaxFoldElements) return std::nullopt;
    ConstTensor fill = ConstTensor::from_doubles({0.0}, {1});
    if (const auto* v = find_attribute(node, "value")) fill = read_tensor(v->t());
    out = gather_elements(fill, dims, [](const std::vector<std::int64_t>&) { return std::int64_t{0}; });
  } else if (op == "Range") {
    need(3);
    const bool integral = in[0]->is_integer();
    const double start = in[0]->scalar(), limit = in[1]->scalar(), delta = in[2]->scalar();
    if (delta == 0) fail(node, "Range with delta 0");
    const auto n = std::max<std::int64_t>(static_cast<std::int64_t>(std::ceil((limit - start) / delta)), 0);
    if (n > kMaxFoldElements) return std::nullopt;
    out = empty_like(in[0]->elem_type, {n});
    for (std::int64_t k = 0; k < n; ++k) {
      if (integral) out.ints.push_back(in[0]->as_int(0) + k * in[2]->as_int(0));
      else out.floats.push_back(start + static_cast<double>(k) * delta);
    }
  } else if (op == "Where") {
    need(3);
    out = elementwise({in[0], in[1], in[2]}, in[1]->elem_type,
                      [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; },
                      [](const std::vector<std::int64_t>& v) { return v[0] != 0 ? v[1] : v[2]; });
  } else if (kUnaryOps.count(op)) {
    need(1); out = fold_unary(node, *in[0]);
  } else {
    need(2); out = fold_binary(node, *in[0], *in[1]);
  }
  return std::vector<ConstTensor>{std::move(out)};
}

std::vector<std::int64_t> broadcast_dims(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      throw InputError(fmt::format("shapes {} and {} do not broadcast", format_dims(a), format_dims(b)));
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::vector<std::int64_t> resolve_reshape(const std::vector<std::int64_t>& input,
                                          const std::vector<std::int64_t>& target, bool allow_zero) {
  std::vector<std::int64_t> out = target;
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allow_zero) {
      if (i >= input.size()) {
        throw InputError(fmt::format("Reshape to {} copies dim {} of a rank-{} input", format_dims(target),
                                     i, input.size()));
      }
      out[i] = input[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) throw InputError(fmt::format("Reshape target {} has two -1 dims", format_dims(target)));
      inferred = static_cast<int>(i);
    } else {
      known *= out[i];
    }
  }
  const std::int64_t total = product(input);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      throw InputError(fmt::format("cannot reshape {} to {}", format_dims(input), format_dims(target)));
    }
    out[static_cast<std::size_t>(inferred)] = total / known;
  } else if (known != total) {
    throw InputError(fmt::format("cannot reshape {} ({} elements) to {}", format_dims(input), total,
                                 format_dims(target)));
  }
  return out;
}

int normalize_axis(std::int64_t axis, std::int64_t rank) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<std::int64_t>(rank, 1)) {
    throw InputError(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return static_cast<int>(a);
}

std::vector<std::int64_t> unsqueeze_dims(const std::vector<std::int64_t>& dims,
                                         const std::vector<std::int64_t>& axes) {
  const auto out_rank = static_cast<std::int64_t>(dims.size() + axes.size());
  std::set<std::int64_t> inserted;
  for (auto a : axes) inserted.insert(normalize_axis(a, out_rank));
  std::vector<std::int64_t> out;
  std::size_t next = 0;
  for (std::int64_t i = 0; i < out_rank; ++i) {
    out.push_back(inserted.count(i) ? 1 : dims.at(next++));
  }
  return out;
}

std::vector<std::int64_t> squeeze_dims(const std::vector<std::int64_t>& dims,
                                       const std::vector<std::int64_t>& axes) {
  std::set<std::int64_t> removed;
  for (auto a : axes) removed.insert(normalize_axis(a, static_cast<std::int64_t>(dims.size())));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const bool drop = axes.empty() ? dims[i] == 1 : removed.count(static_cast<std::int64_t>(i)) != 0;
    if (drop && dims[i] != 1) {
      throw InputError(fmt::format("Squeeze of axis {} of size {}", i, dims[i]));
    }
    if (!drop) out.push_back(dims[i]);
  }
  return out;
}

}  // namespace unity::onnxio
