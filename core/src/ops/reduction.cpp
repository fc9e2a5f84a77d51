// The Reduction operator (unity/core/ops/reduction.h): its definition and its arithmetic. Its shape
// inference is ReduceSum's with the degrees its reduction allows (shape_inference_reduction.cpp).
#include "unity/core/ops/reduction.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"

namespace unity {

template <>
const OperatorDefinition& define_operator<OpType::Reduction>() {
  static const OperatorDefinition d{
      {OpType::Reduction, "Reduction", OpCategory::Compute, 1, 1},
      {},
      {},
      "x reduced over `axes` by max, min, prod, l1, l2, sum_square, log_sum or log_sum_exp",
      {}};
  return d;
}

namespace {

struct Entry {
  ReductionKind kind;
  std::string_view name, onnx;
};
constexpr std::array<Entry, 8> kEntries = {{
    {ReductionKind::Max, "max", "ReduceMax"},
    {ReductionKind::Min, "min", "ReduceMin"},
    {ReductionKind::Prod, "prod", "ReduceProd"},
    {ReductionKind::L1, "l1", "ReduceL1"},
    {ReductionKind::L2, "l2", "ReduceL2"},
    {ReductionKind::SumSquare, "sum_square", "ReduceSumSquare"},
    {ReductionKind::LogSum, "log_sum", "ReduceLogSum"},
    {ReductionKind::LogSumExp, "log_sum_exp", "ReduceLogSumExp"},
}};

const Entry& entry(ReductionKind k) { return kEntries[static_cast<std::size_t>(k)]; }

// For each element of x, the index of the output element it reduces into.
std::vector<std::int64_t> output_index(const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes) {
  const int rank = static_cast<int>(shape.size());
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;
  // Row-major strides of the output (reduced axes contribute nothing).
  std::vector<std::int64_t> stride(static_cast<std::size_t>(rank), 0);
  std::int64_t s = 1, n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    n *= shape[d];
    if (reduced[d]) continue;
    stride[d] = s;
    s *= shape[d];
  }
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(rank), 0);
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = at;
    for (int d = rank - 1; d >= 0; --d) {
      at += stride[d];
      if (++idx[d] < shape[d]) break;
      at -= stride[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

std::int64_t output_count(const std::vector<std::int64_t>& shape, const std::vector<int>& axes) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(d)) == axes.end()) n *= shape[d];
  return n;
}

}  // namespace

const std::vector<std::string>& reduction_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kEntries) v.emplace_back(e.name);
    return v;
  }();
  return names;
}

ReductionKind reduction_kind(const Operator& op) {
  if (!op.attrs.has("reduction")) throw ShapeError("attribute 'reduction' is missing");
  const std::string& name = op.attrs.get_string("reduction");
  for (const auto& e : kEntries)
    if (e.name == name) return e.kind;
  std::string known;
  for (const auto& e : kEntries) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw ShapeError("attribute 'reduction' is \"" + name + "\"; it must be one of " + known);
}

std::string_view to_string(ReductionKind k) { return entry(k).name; }
std::string_view reduction_onnx_type(ReductionKind k) { return entry(k).onnx; }

bool reduction_from_onnx_type(std::string_view op_type, ReductionKind& k) {
  for (const auto& e : kEntries)
    if (e.onnx == op_type) {
      k = e.kind;
      return true;
    }
  return false;
}

bool reduction_sums_parts(ReductionKind k) {
  return k == ReductionKind::L1 || k == ReductionKind::SumSquare;
}

bool reduction_transcendental(ReductionKind k) {
  return k == ReductionKind::LogSumExp || k == ReductionKind::LogSum || k == ReductionKind::L2;
}

void reduction_forward(ReductionKind k, const std::vector<std::int64_t>& shape,
                       const std::vector<int>& axes, const double* x, double* y) {
  const auto at = output_index(shape, axes);
  const std::int64_t m = output_count(shape, axes);
  constexpr double inf = std::numeric_limits<double>::infinity();
  using K = ReductionKind;
  const double init = k == K::Max ? -inf : k == K::Min ? inf : k == K::Prod ? 1.0 : 0.0;
  std::fill(y, y + m, init);
  // log_sum_exp subtracts each output's maximum first, so that exp never overflows.
  std::vector<double> shift;
  if (k == K::LogSumExp) {
    shift.assign(static_cast<std::size_t>(m), -inf);
    for (std::size_t i = 0; i < at.size(); ++i) shift[at[i]] = std::max(shift[at[i]], x[i]);
  }
  for (std::size_t i = 0; i < at.size(); ++i) {
    double& acc = y[at[i]];
    const double v = x[i];
    switch (k) {
      case K::Max:
        acc = std::max(acc, v);
        break;
      case K::Min:
        acc = std::min(acc, v);
        break;
      case K::Prod:
        acc *= v;
        break;
      case K::L1:
        acc += std::abs(v);
        break;
      case K::L2:
      case K::SumSquare:
        acc += v * v;
        break;
      case K::LogSum:
        acc += v;
        break;
      case K::LogSumExp:
        if (shift[at[i]] > -inf) acc += std::exp(v - shift[at[i]]);
        break;
    }
  }
  for (std::int64_t o = 0; o < m; ++o) {
    if (k == K::L2) y[o] = std::sqrt(y[o]);
    if (k == K::LogSum) y[o] = std::log(y[o]);
    if (k == K::LogSumExp) y[o] = shift[o] == -inf ? -inf : shift[o] + std::log(y[o]);
  }
}

void reduction_backward(ReductionKind k, const std::vector<std::int64_t>& shape,
                        const std::vector<int>& axes, const double* x, const double* y,
                        const double* dy, double* dx) {
  const auto at = output_index(shape, axes);
  const std::int64_t m = output_count(shape, axes);
  using K = ReductionKind;
  // Max and min: how many elements attain each result; prod: the zeros and the product of the
  // other elements of each output.
  std::vector<double> ties, nonzero;
  std::vector<std::int64_t> zeros;
  if (k == K::Max || k == K::Min) {
    ties.assign(static_cast<std::size_t>(m), 0.0);
    for (std::size_t i = 0; i < at.size(); ++i)
      if (x[i] == y[at[i]]) ties[at[i]] += 1;
  }
  if (k == K::Prod) {
    nonzero.assign(static_cast<std::size_t>(m), 1.0);
    zeros.assign(static_cast<std::size_t>(m), 0);
    for (std::size_t i = 0; i < at.size(); ++i) {
      if (x[i] == 0)
        ++zeros[at[i]];
      else
        nonzero[at[i]] *= x[i];
    }
  }
  for (std::size_t i = 0; i < at.size(); ++i) {
    const std::int64_t o = at[i];
    const double v = x[i], g = dy[o];
    switch (k) {
      case K::Max:
      case K::Min:
        if (v == y[o]) dx[i] += g / ties[o];
        break;
      case K::Prod:
        if (v != 0)
          dx[i] += zeros[o] == 0 ? g * nonzero[o] / v : 0.0;
        else
          dx[i] += zeros[o] == 1 ? g * nonzero[o] : 0.0;
        break;
      case K::L1:
        dx[i] += v > 0 ? g : v < 0 ? -g : 0.0;
        break;
      case K::L2:
        dx[i] += y[o] > 0 ? g * v / y[o] : 0.0;
        break;
      case K::SumSquare:
        dx[i] += 2 * v * g;
        break;
      case K::LogSum:
        dx[i] += g * std::exp(-y[o]);
        break;
      case K::LogSumExp:
        dx[i] += g * std::exp(v - y[o]);
        break;
    }
  }
}

}  // namespace unity
