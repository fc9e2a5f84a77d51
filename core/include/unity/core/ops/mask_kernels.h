#pragma once
// The mask operators: Compare (Equal, Less, Greater, LessOrEqual, GreaterOrEqual as the
// `comparison` attribute), Logical (And, Or, Xor, Not as `logic`), Where(condition, x, y) and
// Cast (`to`, a type name). Comparisons and logic make Bool masks, Where selects by one, Cast turns
// masks and integers into floats and back. All but Cast broadcast their operands like numpy (as
// Add does), and only Where has a gradient (to x and y).
//
// One arithmetic, in double, for the executor's host kernels (executor/src/ops/mask_ops.cpp) and
// the rule evaluator, as index_kernels.h is for the index operators. Shape inference
// (shape_inference_mask.cpp), the executor's task requests and replica rules and the verifier
// handle them as one family: is_mask_operator is the one list of its members.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "unity/core/pcg/data_type.h"
#include "unity/core/pcg/op_type.h"
#include "unity/core/pcg/operator.h"

namespace unity {

inline bool is_mask_operator(OpType op) {
  return op == OpType::Compare || op == OpType::Logical || op == OpType::Where ||
         op == OpType::Cast;
}

namespace mask_kernels {

enum class Comparison { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };
enum class Logic { And, Or, Xor, Not };

// The `comparison` and `logic` attributes' values; false for an unknown name.
inline bool comparison_of(std::string_view name, Comparison& c) {
  static constexpr std::pair<std::string_view, Comparison> kNames[] = {
      {"equal", Comparison::Equal},
      {"less", Comparison::Less},
      {"greater", Comparison::Greater},
      {"less_or_equal", Comparison::LessOrEqual},
      {"greater_or_equal", Comparison::GreaterOrEqual}};
  for (const auto& [n, v] : kNames)
    if (n == name) {
      c = v;
      return true;
    }
  return false;
}

inline bool logic_of(std::string_view name, Logic& l) {
  static constexpr std::pair<std::string_view, Logic> kNames[] = {
      {"and", Logic::And}, {"or", Logic::Or}, {"xor", Logic::Xor}, {"not", Logic::Not}};
  for (const auto& [n, v] : kNames)
    if (n == name) {
      l = v;
      return true;
    }
  return false;
}

inline double compare(Comparison c, double a, double b) {
  switch (c) {
    case Comparison::Equal:
      return a == b;
    case Comparison::Less:
      return a < b;
    case Comparison::Greater:
      return a > b;
    case Comparison::LessOrEqual:
      return a <= b;
    case Comparison::GreaterOrEqual:
      return a >= b;
  }
  return 0;
}

inline double logic(Logic l, double a, double b) {
  const bool p = a != 0, q = b != 0;
  switch (l) {
    case Logic::And:
      return p && q;
    case Logic::Or:
      return p || q;
    case Logic::Xor:
      return p != q;
    case Logic::Not:
      return !p;
  }
  return 0;
}

// One value cast to `to`: an integer type truncates toward zero (as C and ONNX do), Bool is
// x != 0, a floating type keeps the value (the kernels compute in float32 whatever the type).
inline double cast(DataType to, double x) {
  if (to == DataType::Bool) return x != 0;
  if (is_floating(to) || !std::isfinite(x) || std::abs(x) >= 9.2e18) return x;
  // Toward zero, then into the type's range as C's conversions leave it (300 to uint8 is 44).
  return static_cast<double>(wrap_integer(to, static_cast<std::int64_t>(std::trunc(x))));
}

// Calls f(o, offsets) for each element o of an output of sizes `out` (row-major), offsets[i] the
// element of operand i that broadcasting reads (operands aligned at their last dim; a dim of size 1
// or missing is read at 0).
template <typename F>
void for_each_broadcast(const std::vector<std::int64_t>& out,
                        const std::vector<std::vector<std::int64_t>>& in, F&& f) {
  const int r = static_cast<int>(out.size());
  // Per operand, the stride of each output dim in the operand (0 where it broadcasts).
  std::vector<std::vector<std::int64_t>> strides(in.size(), std::vector<std::int64_t>(r, 0));
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::int64_t s = 1;
    const int ri = static_cast<int>(in[i].size());
    for (int d = ri - 1; d >= 0; --d) {
      const int j = d + r - ri;
      if (j >= 0 && in[i][d] != 1) strides[i][j] = s;
      s *= in[i][d];
    }
  }
  std::int64_t total = 1;
  for (auto s : out) total *= s;
  std::vector<std::int64_t> idx(r, 0), offsets(in.size(), 0);
  for (std::int64_t o = 0; o < total; ++o) {
    f(o, offsets);
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      for (std::size_t i = 0; i < in.size(); ++i) offsets[i] += strides[i][d];
      if (idx[d] < out[d]) break;
      for (std::size_t i = 0; i < in.size(); ++i) offsets[i] -= strides[i][d] * out[d];
      idx[d] = 0;
    }
  }
}

// What a node computes per element, read from its attributes; `ok` false when an attribute names
// no comparison or logic (shape inference rejects those nodes first).
struct MaskFunction {
  OpType type = OpType::Compare;
  Comparison comparison = Comparison::Equal;
  Logic logic = Logic::And;
  DataType to = DataType::Float32;
  // Compare's second operand, Where's x or y, when an attribute rather than an input.
  std::optional<double> scalar, x, y;
  bool ok = true;
};

inline MaskFunction mask_function(const Operator& op) {
  MaskFunction m;
  m.type = op.type;
  auto optional = [&](const char* name) {
    return op.attrs.has(name) ? std::optional<double>(op.attrs.get_double(name)) : std::nullopt;
  };
  if (op.type == OpType::Compare) {
    m.ok = comparison_of(op.attrs.get_string("comparison", ""), m.comparison);
    m.scalar = optional("scalar");
  } else if (op.type == OpType::Logical) {
    m.ok = logic_of(op.attrs.get_string("logic", ""), m.logic);
  } else if (op.type == OpType::Where) {
    m.x = optional("x");
    m.y = optional("y");
  } else if (op.type == OpType::Cast) {
    m.to = data_type_from_string(op.attrs.get_string("to"));
  }
  return m;
}

// The input slot of Where's x and y (-1: the attribute).
inline int where_slot(const MaskFunction& m, int operand) {
  if (operand == 1) return m.x ? -1 : 1;
  return m.y ? -1 : (m.x ? 1 : 2);
}

// The forward pass: operands `in` (sizes `in_sizes`, broadcast to `out_sizes`) to `out`.
inline void forward(const MaskFunction& m, const std::vector<const double*>& in,
                    const std::vector<std::vector<std::int64_t>>& in_sizes,
                    const std::vector<std::int64_t>& out_sizes, double* out) {
  const int xs = where_slot(m, 1), ys = where_slot(m, 2);
  for_each_broadcast(out_sizes, in_sizes, [&](std::int64_t o, const std::vector<std::int64_t>& at) {
    const double a = in[0][at[0]];
    switch (m.type) {
      case OpType::Compare:
        out[o] = compare(m.comparison, a, m.scalar ? *m.scalar : in[1][at[1]]);
        break;
      case OpType::Logical:
        out[o] = logic(m.logic, a, in.size() > 1 ? in[1][at[1]] : 0.0);
        break;
      case OpType::Where:
        if (a != 0)
          out[o] = xs < 0 ? *m.x : in[xs][at[xs]];
        else
          out[o] = ys < 0 ? *m.y : in[ys][at[ys]];
        break;
      default:  // Cast
        out[o] = cast(m.to, a);
    }
  });
}

// Where's backward: d(x) += dy where the condition holds and d(y) += dy where it does not, each
// summed over the dims its operand is broadcast along. grads[s] is input s's gradient (null: none,
// or not an input); grads[0], the condition's, is never written.
template <typename Cond, typename G>
void where_backward(const MaskFunction& m, const Cond* condition, const G* dout,
                    const std::vector<std::vector<std::int64_t>>& in_sizes,
                    const std::vector<std::int64_t>& out_sizes, const std::vector<G*>& grads) {
  const int xs = where_slot(m, 1), ys = where_slot(m, 2);
  G* dx = xs > 0 ? grads[xs] : nullptr;
  G* dy = ys > 0 ? grads[ys] : nullptr;
  for_each_broadcast(out_sizes, in_sizes, [&](std::int64_t o, const std::vector<std::int64_t>& at) {
    if (condition[at[0]] != 0) {
      if (dx) dx[at[xs]] += dout[o];
    } else if (dy) {
      dy[at[ys]] += dout[o];
    }
  });
}

}  // namespace mask_kernels
}  // namespace unity
