#include "onnx/constant_folding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "onnx/folding_kernels.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using namespace folding;

// Ops folded when every input is a constant. Most also import on activations (see the handlers of
// onnx_op_mapping.cpp); ConstantOfShape, Range and Constant exist only to compute constants.
const std::set<std::string_view> kFoldableOps = {"Constant",
                                                 "Shape",
                                                 "Size",
                                                 "EyeLike",
                                                 "ConstantOfShape",
                                                 "Range",
                                                 "Floor",
                                                 "Ceil",
                                                 "Abs",
                                                 "Min",
                                                 "Max",
                                                 "Mod",
                                                 "Expand",
                                                 "Log",
                                                 "Trilu",
                                                 "Tile",
                                                 "ScatterND",
                                                 "Gather",
                                                 "Unsqueeze",
                                                 "Squeeze",
                                                 "Concat",
                                                 "Cast",
                                                 "CastLike",
                                                 "Slice",
                                                 "Reshape",
                                                 "Flatten",
                                                 "Transpose",
                                                 "Add",
                                                 "Sub",
                                                 "Mul",
                                                 "Div",
                                                 "Pow",
                                                 "Sqrt",
                                                 "Neg",
                                                 "Reciprocal",
                                                 "Exp",
                                                 "Erf",
                                                 "Relu",
                                                 "Sigmoid",
                                                 "Tanh",
                                                 "Where",
                                                 "Split",
                                                 "Equal",
                                                 "Less",
                                                 "Greater",
                                                 "LessOrEqual",
                                                 "GreaterOrEqual",
                                                 "Not",
                                                 "And",
                                                 "Or",
                                                 "Xor",
                                                 "HannWindow",
                                                 "HammingWindow",
                                                 "BlackmanWindow",
                                                 "MelWeightMatrix"};

std::vector<std::int64_t> axes_of(const ::onnx::NodeProto& node,
                                  const std::vector<const ConstTensor*>& in, int slot) {
  if (auto attr = attr_ints(node, "axes")) return *attr;
  if (static_cast<int>(in.size()) > slot && in[static_cast<std::size_t>(slot)]) {
    return in[static_cast<std::size_t>(slot)]->to_ints();
  }
  return {};
}

ConstTensor reshaped(ConstTensor t, std::vector<std::int64_t> dims) {
  t.dims = std::move(dims);
  return t;
}

}  // namespace

// A point-wise operator's ONNX type (Sin, Softplus, LeakyRelu, ...) that the unary folds above do
// not cover: folded on floating constants by its definition's function.
const OperatorDefinition* folded_by_definition(std::string_view op) {
  if (is_unary_op(op)) return nullptr;
  const OperatorDefinition* d = definition_for(op);
  return d && d->pointwise ? d : nullptr;
}

bool is_foldable_op(std::string_view op) {
  return kFoldableOps.count(op) != 0 || folded_by_definition(op) != nullptr;
}
bool is_shape_query_op(std::string_view op) {
  return op == "Shape" || op == "Size" || op == "EyeLike";
}

ConstTensor fold_shape_query(const ::onnx::NodeProto& node, const std::vector<std::int64_t>& dims,
                             int elem_type) {
  if (node.op_type() == "Size") return ConstTensor::from_ints({product(dims)}, {});
  if (node.op_type() == "EyeLike") {
    // Ones on diagonal k of a 2-D tensor of the input's shape, zeros elsewhere.
    if (dims.size() != 2) fail(node, "EyeLike needs a 2-D input");
    ConstTensor out = empty_like(static_cast<int>(attr_int(node, "dtype", elem_type)), dims);
    const std::int64_t k = attr_int(node, "k", 0);
    for (std::int64_t i = 0; i < dims[0]; ++i)
      for (std::int64_t j = 0; j < dims[1]; ++j) {
        if (out.is_integer())
          out.ints.push_back(j - i == k);
        else
          out.floats.push_back(j - i == k ? 1.0 : 0.0);
      }
    return out;
  }
  const auto rank = static_cast<std::int64_t>(dims.size());
  auto clamp = [rank](std::int64_t v) {
    return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
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
    if (const auto* t = find_attribute(node, "value"))
      out = read_tensor(t->t());
    else if (const auto* f = find_attribute(node, "value_float"))
      out = ConstTensor::from_doubles({f->f()}, {});
    else if (const auto* fs = find_attribute(node, "value_floats")) {
      out = ConstTensor::from_doubles({fs->floats().begin(), fs->floats().end()},
                                      {fs->floats_size()});
    } else if (const auto* i = find_attribute(node, "value_int"))
      out = ConstTensor::from_ints({i->i()}, {});
    else if (const auto* is = find_attribute(node, "value_ints")) {
      out = ConstTensor::from_ints({is->ints().begin(), is->ints().end()}, {is->ints_size()});
    } else {
      fail(node, "only tensor, float and int constants are supported");
    }
  } else if (op == "Identity") {
    need(1);
    out = *in[0];
  } else if (op == "Cast") {
    need(1);
    out = fold_cast(*in[0], static_cast<int>(attr_int(node, "to", 1 /* FLOAT */)));
  } else if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow") {
    need(1);
    out = fold_window(node, in[0]->scalar());
  } else if (op == "MelWeightMatrix") {
    need(5);
    out = fold_mel_weight_matrix(node, in[0]->as_int(0), in[1]->as_int(0), in[2]->as_double(0),
                                 in[3]->as_double(0), in[4]->as_double(0));
  } else if (op == "CastLike") {
    need(2);
    out = fold_cast(*in[0], in[1]->elem_type);
  } else if (op == "Gather") {
    need(2);
    out = fold_gather(node, *in[0], *in[1]);
  } else if (op == "Unsqueeze") {
    need(1);
    out = reshaped(*in[0], unsqueeze_dims(in[0]->dims, axes_of(node, in, 1)));
  } else if (op == "Squeeze") {
    need(1);
    out = reshaped(*in[0], squeeze_dims(in[0]->dims, axes_of(node, in, 1)));
  } else if (op == "Concat") {
    need(in.size());
    out = fold_concat(node, in);
  } else if (op == "Slice") {
    need(opset < 10 ? 1 : 3);
    out = fold_slice(node, in, opset);
  } else if (op == "Split") {
    need(1);
    const auto rank = static_cast<std::int64_t>(in[0]->dims.size());
    const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
    const auto sizes = split_sizes(node, in[0]->dims[axis], opset, in.size() > 1 ? in[1] : nullptr);
    std::vector<ConstTensor> pieces;
    std::int64_t start = 0;
    for (const auto size : sizes) {
      auto dims = in[0]->dims;
      dims[axis] = size;
      const auto strides = strides_of(in[0]->dims);
      pieces.push_back(gather_elements(*in[0], dims, [&](const Index& index) {
        std::int64_t flat = 0;
        for (std::size_t d = 0; d < index.size(); ++d)
          flat += (index[d] + (static_cast<int>(d) == axis ? start : 0)) * strides[d];
        return flat;
      }));
      start += size;
    }
    return pieces;
  } else if (op == "Reshape") {
    need(2);
    out = reshaped(*in[0], resolve_reshape(in[0]->dims, in[1]->to_ints(),
                                           attr_int(node, "allowzero", 0) != 0));
  } else if (op == "Flatten") {
    need(1);
    const auto rank = static_cast<std::int64_t>(in[0]->dims.size());
    const auto axis = static_cast<std::int64_t>(flatten_axis(attr_int(node, "axis", 1), rank));
    const std::vector<std::int64_t> head(in[0]->dims.begin(), in[0]->dims.begin() + axis);
    out = reshaped(*in[0],
                   {product(head), in[0]->numel() / std::max<std::int64_t>(product(head), 1)});
  } else if (op == "Transpose") {
    need(1);
    out = fold_transpose(node, *in[0]);
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
    out = gather_elements(fill, dims,
                          [](const std::vector<std::int64_t>&) { return std::int64_t{0}; });
  } else if (op == "Range") {
    need(3);
    const bool integral = in[0]->is_integer();
    const double start = in[0]->scalar(), limit = in[1]->scalar(), delta = in[2]->scalar();
    if (delta == 0) fail(node, "Range with delta 0");
    const auto n =
        std::max<std::int64_t>(static_cast<std::int64_t>(std::ceil((limit - start) / delta)), 0);
    if (n > kMaxFoldElements) return std::nullopt;
    out = empty_like(in[0]->elem_type, {n});
    for (std::int64_t k = 0; k < n; ++k) {
      if (integral)
        out.ints.push_back(in[0]->as_int(0) + k * in[2]->as_int(0));
      else
        out.floats.push_back(start + static_cast<double>(k) * delta);
    }
  } else if (op == "Where") {
    need(3);
    if (product(broadcast_dims(broadcast_dims(in[0]->dims, in[1]->dims), in[2]->dims)) >
        kMaxFoldElements)
      return std::nullopt;
    out = fold_where(*in[0], *in[1], *in[2]);
  } else if (op == "Trilu") {
    need(1);
    const std::int64_t k = in.size() > 1 && in[1] ? static_cast<std::int64_t>(in[1]->scalar()) : 0;
    out = fold_trilu(node, *in[0], k, attr_int(node, "upper", 1) != 0);
  } else if (op == "Tile") {
    need(2);
    std::vector<std::int64_t> dims = in[0]->dims;
    const auto repeats = in[1]->to_ints();
    if (repeats.size() != dims.size()) fail(node, "repeats must have one entry per input dim");
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (repeats[d] < 0 || __builtin_mul_overflow(dims[d], repeats[d], &dims[d]))
        fail(node, fmt::format("repeats[{}] = {} is negative or too large", d, repeats[d]));
    if (product(dims) > kMaxFoldElements) return std::nullopt;
    const auto strides = strides_of(in[0]->dims);
    out = gather_elements(*in[0], dims, [&](const std::vector<std::int64_t>& index) {
      std::int64_t flat = 0;
      for (std::size_t d = 0; d < index.size(); ++d)
        flat += (index[d] % in[0]->dims[d]) * strides[d];
      return flat;
    });
  } else if (op == "ScatterND") {
    need(3);
    out = fold_scatter_nd(node, *in[0], *in[1], *in[2]);
  } else if (const OperatorDefinition* d = folded_by_definition(op)) {
    need(1);
    if (in[0]->is_integer()) return std::nullopt;
    const std::vector<double> params =
        operator_parameters({d->info.type, parameters_of(node, *d), ""});
    out = *in[0];
    for (double& v : out.floats) v = d->pointwise->value(v, params.data());
  } else if (is_unary_op(op)) {
    need(1);
    out = fold_unary(node, *in[0]);
  } else {
    need(2);
    // Broadcasting small inputs can make a result far larger than both: fold only what the
    // caller's bound on the inputs would have allowed.
    if (product(broadcast_dims(in[0]->dims, in[1]->dims)) > kMaxFoldElements) return std::nullopt;
    out = fold_binary(node, *in[0], *in[1]);
  }
  return std::vector<ConstTensor>{std::move(out)};
}

std::vector<std::int64_t> split_sizes(const ::onnx::NodeProto& node, std::int64_t extent,
                                      std::int64_t opset, const ConstTensor* split) {
  std::vector<std::int64_t> sizes;
  if (auto attr = attr_ints(node, "split"); attr && opset < 13)
    sizes = *attr;
  else if (split)
    sizes = split->to_ints();
  if (sizes.empty()) {
    const std::int64_t parts = attr_int(node, "num_outputs", node.output_size());
    if (parts <= 0) throw InputError(fmt::format("{}: splits into no pieces", describe_node(node)));
    const std::int64_t piece = (extent + parts - 1) / parts;
    for (std::int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<std::int64_t>(std::min(piece, extent - i * piece), 0));
  }
  std::int64_t total = 0;
  for (auto size : sizes) total += size;
  if (total != extent || static_cast<int>(sizes.size()) != node.output_size())
    throw InputError(fmt::format("{}: pieces {} of an axis of {} for {} outputs",
                                 describe_node(node), format_dims(sizes), extent,
                                 node.output_size()));
  return sizes;
}

std::vector<std::int64_t> broadcast_dims(const std::vector<std::int64_t>& a,
                                         const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      throw InputError(
          fmt::format("shapes {} and {} do not broadcast", format_dims(a), format_dims(b)));
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::vector<std::int64_t> resolve_reshape(const std::vector<std::int64_t>& input,
                                          const std::vector<std::int64_t>& target,
                                          bool allow_zero) {
  std::vector<std::int64_t> out = target;
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allow_zero) {
      if (i >= input.size()) {
        throw InputError(fmt::format("Reshape to {} copies dim {} of a rank-{} input",
                                     format_dims(target), i, input.size()));
      }
      out[i] = input[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0)
        throw InputError(fmt::format("Reshape target {} has two -1 dims", format_dims(target)));
      inferred = static_cast<int>(i);
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      throw InputError(fmt::format("Reshape target {} has more elements than fit in 64 bits",
                                   format_dims(target)));
    }
  }
  const std::int64_t total = product(input);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      throw InputError(
          fmt::format("cannot reshape {} to {}", format_dims(input), format_dims(target)));
    }
    out[static_cast<std::size_t>(inferred)] = total / known;
  } else if (known != total) {
    throw InputError(fmt::format("cannot reshape {} ({} elements) to {}", format_dims(input), total,
                                 format_dims(target)));
  }
  return out;
}

int flatten_axis(std::int64_t axis, std::int64_t rank) {
  // Flatten's axis splits the dims before it from the rest: 0 to rank, or counted back from rank.
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank)
    throw InputError(fmt::format("Flatten axis {} is out of range for rank {}", axis, rank));
  return static_cast<int>(a);
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
    const bool drop =
        axes.empty() ? dims[i] == 1 : removed.count(static_cast<std::int64_t>(i)) != 0;
    if (drop && dims[i] != 1) {
      throw InputError(fmt::format("Squeeze of axis {} of size {}", i, dims[i]));
    }
    if (!drop) out.push_back(dims[i]);
  }
  return out;
}

}  // namespace unity::onnxio
