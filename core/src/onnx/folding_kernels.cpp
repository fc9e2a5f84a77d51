// Index arithmetic and element-wise maths for constant folding (see folding_kernels.h).
#include "onnx/folding_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio::folding {
namespace {

using TP = ::onnx::TensorProto;

const std::set<std::string_view> kUnaryOps = {"Sqrt", "Neg",     "Reciprocal", "Floor", "Ceil",
                                              "Abs",  "Not",     "Exp",        "Log",   "Erf",
                                              "Relu", "Sigmoid", "Tanh"};

ConstTensor elementwise(
    const std::vector<const ConstTensor*>& in, int result_type,
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
      if (all_integer)
        iargs[i] = in[i]->as_int(src);
      else
        fargs[i] = in[i]->as_double(src);
    }
    if (all_integer) {
      const std::int64_t v = int_op(iargs);
      if (out.is_integer())
        out.ints.push_back(v);
      else
        out.floats.push_back(static_cast<double>(v));
    } else {
      const double v = float_op(fargs);
      if (out.is_integer())
        out.ints.push_back(static_cast<std::int64_t>(v));
      else
        out.floats.push_back(v);
    }
  });
  return out;
}

}  // namespace

// Appends element `index` of src to dst (same element kind).
void copy_element(const ConstTensor& src, std::int64_t index, ConstTensor& dst) {
  if (dst.is_integer())
    dst.ints.push_back(src.as_int(index));
  else
    dst.floats.push_back(src.as_double(index));
}

[[noreturn]] void fail(const ::onnx::NodeProto& node, const std::string& what) {
  throw InputError(fmt::format("{}: {}", describe_node(node), what));
}

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<std::size_t>(i)] =
        strides[static_cast<std::size_t>(i) + 1] * dims[static_cast<std::size_t>(i) + 1];
  }
  return strides;
}

// Flat index into a tensor of `dims` (right-aligned, size-1 dims broadcast) of the element at
// multi-index `index` of the `out` shape.
std::int64_t broadcast_index(const std::vector<std::int64_t>& index,
                             const std::vector<std::int64_t>& dims) {
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
  // A negative size would reserve 2^64 - n elements: a kernel's result shape from a bad file.
  if (t.numel() < 0)
    throw InputError(
        fmt::format("a folded tensor would have the negative shape {}", format_dims(t.dims)));
  if (t.is_integer())
    t.ints.reserve(static_cast<std::size_t>(t.numel()));
  else
    t.floats.reserve(static_cast<std::size_t>(t.numel()));
  return t;
}

ConstTensor gather_elements(
    const ConstTensor& src, std::vector<std::int64_t> dims,
    const std::function<std::int64_t(const std::vector<std::int64_t>&)>& source_index) {
  ConstTensor out = empty_like(src.elem_type, dims);
  for_each_index(dims, [&](const std::vector<std::int64_t>& index, std::int64_t) {
    copy_element(src, source_index(index), out);
  });
  return out;
}

ConstTensor fold_binary(const ::onnx::NodeProto& node, const ConstTensor& a, const ConstTensor& b) {
  const std::string& op = node.op_type();
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor";
  const int type = compare ? TP::BOOL : a.elem_type;
  std::function<double(double, double)> f;
  std::function<std::int64_t(std::int64_t, std::int64_t)> i;
  if (op == "Add") {
    f = std::plus<double>();
    i = std::plus<std::int64_t>();
  } else if (op == "Sub") {
    f = std::minus<double>();
    i = std::minus<std::int64_t>();
  } else if (op == "Mul") {
    f = std::multiplies<double>();
    i = std::multiplies<std::int64_t>();
  } else if (op == "Div") {
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
  } else if (op == "Min") {
    f = [](double x, double y) { return std::min(x, y); };
    i = [](std::int64_t x, std::int64_t y) { return std::min(x, y); };
  } else if (op == "Max") {
    f = [](double x, double y) { return std::max(x, y); };
    i = [](std::int64_t x, std::int64_t y) { return std::max(x, y); };
  } else if (op == "Equal") {
    f = [](double x, double y) { return x == y ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x == y; };
  } else if (op == "Less") {
    f = [](double x, double y) { return x < y ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x < y; };
  } else if (op == "Greater") {
    f = [](double x, double y) { return x > y ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x > y; };
  } else if (op == "LessOrEqual") {
    f = [](double x, double y) { return x <= y ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x <= y; };
  } else if (op == "GreaterOrEqual") {
    f = [](double x, double y) { return x >= y ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x >= y; };
  } else if (op == "Xor") {
    f = [](double x, double y) { return (x != 0) != (y != 0) ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return (x != 0) != (y != 0); };
  } else if (op == "And") {
    f = [](double x, double y) { return (x != 0 && y != 0) ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x != 0 && y != 0; };
  } else {
    f = [](double x, double y) { return (x != 0 || y != 0) ? 1.0 : 0.0; };
    i = [](std::int64_t x, std::int64_t y) -> std::int64_t { return x != 0 || y != 0; };
  }
  return elementwise(
      {&a, &b}, type, [&](const std::vector<double>& v) { return f(v[0], v[1]); },
      [&](const std::vector<std::int64_t>& v) { return i(v[0], v[1]); });
}

ConstTensor fold_unary(const ::onnx::NodeProto& node, const ConstTensor& x) {
  const std::string& op = node.op_type();
  std::function<double(double)> f;
  if (op == "Sqrt")
    f = [](double v) { return std::sqrt(v); };
  else if (op == "Neg")
    f = [](double v) { return -v; };
  else if (op == "Reciprocal")
    f = [](double v) { return 1.0 / v; };
  else if (op == "Floor")
    f = [](double v) { return std::floor(v); };
  else if (op == "Ceil")
    f = [](double v) { return std::ceil(v); };
  else if (op == "Abs")
    f = [](double v) { return std::abs(v); };
  else if (op == "Not")
    f = [](double v) { return v == 0 ? 1.0 : 0.0; };
  else if (op == "Exp")
    f = [](double v) { return std::exp(v); };
  else if (op == "Log")
    f = [](double v) { return std::log(v); };
  else if (op == "Erf")
    f = [](double v) { return std::erf(v); };
  else if (op == "Relu")
    f = [](double v) { return std::max(v, 0.0); };
  else if (op == "Sigmoid")
    f = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  else
    f = [](double v) { return std::tanh(v); };
  // Neg and Abs keep integers exact; the rest are float maths in ONNX anyway.
  const bool exact_int = x.is_integer() && (op == "Neg" || op == "Abs" || op == "Not");
  return elementwise(
      {&x}, x.elem_type, [&](const std::vector<double>& v) { return f(v[0]); },
      [&](const std::vector<std::int64_t>& v) -> std::int64_t {
        if (exact_int) return op == "Neg" ? -v[0] : op == "Abs" ? std::abs(v[0]) : v[0] == 0;
        return static_cast<std::int64_t>(f(static_cast<double>(v[0])));
      });
}

ConstTensor fold_cast(const ConstTensor& x, int to) {
  ConstTensor out = empty_like(to, x.dims);
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    if (to == TP::BOOL)
      out.ints.push_back(x.as_double(k) != 0.0);
    else if (out.is_integer())
      out.ints.push_back(x.as_int(k));
    else
      out.floats.push_back(x.as_double(k));
  }
  return out;
}

ConstTensor fold_window(const ::onnx::NodeProto& node, double size) {
  const auto n = static_cast<std::int64_t>(size);
  if (n < 0 || static_cast<double>(n) != size) fail(node, "the window size must be a whole number");
  require_constant_size(node, "window", {n});
  const bool periodic = attr_int(node, "periodic", 1) != 0;
  const double span = static_cast<double>(periodic ? n : n - 1);
  ConstTensor out = empty_like(static_cast<int>(attr_int(node, "output_datatype", TP::FLOAT)), {n});
  constexpr double kTau = 6.283185307179586;
  for (std::int64_t i = 0; i < n; ++i) {
    const double phase = span > 0 ? kTau * static_cast<double>(i) / span : 0.0;
    double w = 0;
    if (node.op_type() == "HannWindow")
      w = 0.5 - 0.5 * std::cos(phase);
    else if (node.op_type() == "HammingWindow")
      w = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(phase);
    else  // Blackman
      w = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2 * phase);
    if (out.is_integer())
      out.ints.push_back(static_cast<std::int64_t>(w));
    else
      out.floats.push_back(w);
  }
  return out;
}

ConstTensor fold_mel_weight_matrix(const ::onnx::NodeProto& node, std::int64_t mel_bins,
                                   std::int64_t dft_length, double sample_rate, double lower_hz,
                                   double upper_hz) {
  if (mel_bins < 1 || dft_length < 1 || sample_rate <= 0 || lower_hz < 0 || upper_hz <= lower_hz)
    fail(node, fmt::format("num_mel_bins {}, dft_length {}, sample_rate {} and the edges [{}, {}] "
                           "hertz do not make filters",
                           mel_bins, dft_length, sample_rate, lower_hz, upper_hz));
  const std::int64_t spectrum_bins = dft_length / 2 + 1;
  require_constant_size(node, "mel matrix", {spectrum_bins, mel_bins});
  const auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low = mel(lower_hz);
  const double step = (mel(upper_hz) - low) / static_cast<double>(mel_bins + 2);
  // The filters' edges and centres as DFT bins: edge i of mel_bins + 2.
  std::vector<std::int64_t> edge;
  for (std::int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low) / 2595.0) - 1);
    edge.push_back(static_cast<std::int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / sample_rate)));
  }
  std::vector<double> w(static_cast<std::size_t>(spectrum_bins * mel_bins), 0.0);
  const auto at = [&](std::int64_t bin, std::int64_t filter) -> double& {
    if (bin < 0 || bin >= spectrum_bins)
      fail(node, fmt::format("a filter edge falls on bin {}, outside the {} bins of the spectrum "
                             "(upper_edge_hertz above the Nyquist frequency?)",
                             bin, spectrum_bins));
    return w[static_cast<std::size_t>(bin * mel_bins + filter)];
  };
  for (std::int64_t f = 0; f < mel_bins; ++f) {
    const std::int64_t left = edge[f], centre = edge[f + 1], right = edge[f + 2];
    if (centre == left) {
      at(centre, f) = 1.0;
    } else {
      for (std::int64_t b = left; b <= centre; ++b)
        at(b, f) = static_cast<double>(b - left) / static_cast<double>(centre - left);
    }
    for (std::int64_t b = centre; b < right; ++b)
      at(b, f) = static_cast<double>(right - b) / static_cast<double>(right - centre);
  }
  ConstTensor out = empty_like(static_cast<int>(attr_int(node, "output_datatype", TP::FLOAT)),
                               {spectrum_bins, mel_bins});
  for (double v : w) {
    if (out.is_integer())
      out.ints.push_back(static_cast<std::int64_t>(v));
    else
      out.floats.push_back(v);
  }
  return out;
}

ConstTensor fold_where(const ConstTensor& condition, const ConstTensor& x, const ConstTensor& y) {
  return elementwise(
      {&condition, &x, &y}, x.elem_type,
      [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; },
      [](const std::vector<std::int64_t>& v) { return v[0] != 0 ? v[1] : v[2]; });
}

ConstTensor fold_trilu(const ::onnx::NodeProto& node, const ConstTensor& x, std::int64_t k,
                       bool upper) {
  const std::size_t rank = x.dims.size();
  if (rank < 2) fail(node, "Trilu needs an input of rank >= 2");
  ConstTensor out = empty_like(x.elem_type, x.dims);
  for_each_index(x.dims, [&](const std::vector<std::int64_t>& index, std::int64_t flat) {
    const std::int64_t offset = index[rank - 1] - index[rank - 2];  // column - row
    const bool keep = upper ? offset >= k : offset <= k;
    if (out.is_integer())
      out.ints.push_back(keep ? x.as_int(flat) : 0);
    else
      out.floats.push_back(keep ? x.as_double(flat) : 0.0);
  });
  return out;
}

ConstTensor fold_scatter_nd(const ::onnx::NodeProto& node, const ConstTensor& data,
                            const ConstTensor& indices, const ConstTensor& updates) {
  if (attr_string(node, "reduction", "none") != "none")
    fail(node, "ScatterND with a reduction is not supported");
  if (indices.dims.empty()) fail(node, "ScatterND indices must have rank >= 1");
  const auto depth = static_cast<std::size_t>(indices.dims.back());
  if (depth > data.dims.size()) fail(node, "ScatterND indices are deeper than the data");
  const std::int64_t tuples = indices.numel() / std::max<std::int64_t>(indices.dims.back(), 1);
  const std::vector<std::int64_t> slice_dims(data.dims.begin() + static_cast<long>(depth),
                                             data.dims.end());
  const std::int64_t slice = product(slice_dims);
  if (updates.numel() != tuples * slice) fail(node, "ScatterND updates have the wrong size");
  ConstTensor out = data;
  const auto strides = strides_of(data.dims);
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t base = 0;
    for (std::size_t d = 0; d < depth; ++d) {
      std::int64_t pos =
          indices.as_int(t * static_cast<std::int64_t>(depth) + static_cast<std::int64_t>(d));
      if (pos < 0) pos += data.dims[d];
      if (pos < 0 || pos >= data.dims[d]) fail(node, "ScatterND index out of range");
      base += pos * strides[d];
    }
    for (std::int64_t e = 0; e < slice; ++e) {
      const auto at = static_cast<std::size_t>(base + e);
      if (out.is_integer())
        out.ints[at] = updates.as_int(t * slice + e);
      else
        out.floats[at] = updates.as_double(t * slice + e);
    }
  }
  return out;
}

bool is_unary_op(std::string_view op_type) { return kUnaryOps.count(op_type) != 0; }

}  // namespace unity::onnxio::folding
