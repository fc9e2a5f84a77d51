#pragma once
// The Arithmetic operator: ONNX's arithmetic of broadcast operands beyond Add, Sub, Mul and Div, as
// one operator whose `function` attribute says which:
//   max, min, sum, mean  Max, Min, Sum, Mean: one or more operands (variadic);
//   prelu                PRelu(x, slope): x where x > 0, else slope * x (the slope broadcasts to
//   x); mod, fmod            Mod with fmod 0 (the sign of the divisor, Python's %) and 1 (C's
//   fmod); pow                  Pow(base, exponent) with a tensor exponent (a scalar one is
//   OpType::Pow).
// A scalar constant operand may be the attribute `scalar`, taken as the last operand (x % 2,
// max(x, 0)). Operands broadcast like numpy's (mask_kernels::for_each_broadcast); the output has
// the first operand's type (Pow's exponent may have another).
//
// One arithmetic, in double, for the executor's host kernels (executor/src/ops/arithmetic_ops.cpp)
// and the rule evaluator, as mask_kernels.h is for the mask operators. Its definition, shape
// inference and work are core/src/ops/arithmetic.cpp; the executor's task requests and replica
// rules, the rule evaluator's layouts and the verifier's axioms are the mask operators' (numpy
// broadcasting, copies only: not linear), is_broadcast_operator naming both families.
//
// Gradients (float operands only):
//   sum: dy to every operand; mean: dy / n;
//   max, min: dy to the operand that holds the extreme; where k operands tie, each gets dy / k
//     (as torch.maximum and torch.minimum split it between two equal inputs);
//   prelu: dx = dy where x > 0, else slope * dy; dslope = x * dy where x <= 0 (PyTorch's);
//   mod: da = dy, db = -floor(a / b) * dy; fmod: da = dy, db = -trunc(a / b) * dy (PyTorch's
//     remainder and fmod);
//   pow: dbase = exponent * base^(exponent - 1) * dy; dexponent = base^exponent * ln(base) * dy,
//     0 where base = 0 and exponent >= 0 (PyTorch's; a negative base gives NaN, as there).
// Each operand's gradient is summed over the dims it is broadcast along.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "unity/core/ops/mask_kernels.h"
#include "unity/core/pcg/op_type.h"
#include "unity/core/pcg/operator.h"

namespace unity {

// The operators whose operands broadcast like numpy's and that read copies only: Compare,
// Logical, Where (the mask operators but Cast) and Arithmetic. Their task requests, replica rules,
// rule-evaluator layouts and axioms are one family's.
inline bool is_broadcast_operator(OpType op) {
  return (is_mask_operator(op) && op != OpType::Cast) || op == OpType::Arithmetic;
}

namespace arithmetic {

enum class Function { Max, Min, Sum, Mean, PRelu, Mod, FMod, Pow };

// The `function` attribute's values, in Function order.
inline const std::vector<std::string>& function_names() {
  static const std::vector<std::string> names = {"max",   "min", "sum",  "mean",
                                                 "prelu", "mod", "fmod", "pow"};
  return names;
}

// False for an unknown name.
inline bool function_of(std::string_view name, Function& f) {
  const auto& names = function_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) {
      f = static_cast<Function>(i);
      return true;
    }
  return false;
}

// Max, Min, Sum and Mean take one or more operands; the others exactly two.
inline bool is_variadic(Function f) { return f <= Function::Mean; }

// What a node computes, read from its attributes; `ok` false when `function` names none (shape
// inference rejects those nodes first).
struct Arithmetic {
  Function function = Function::Sum;
  std::optional<double> scalar;  // the last operand, when an attribute
  bool ok = true;
};

inline Arithmetic arithmetic_of(const Operator& op) {
  Arithmetic a;
  a.ok = function_of(op.attrs.get_string("function", ""), a.function);
  if (op.attrs.has("scalar")) a.scalar = op.attrs.get_double("scalar");
  return a;
}

// Python's % (the sign of the divisor) and C's fmod; an integer division by 0 gives 0, as numpy's.
inline double mod(double a, double b, bool fmod, bool integer) {
  if (integer && b == 0) return 0;
  double r = std::fmod(a, b);
  if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// One output element of operands v[0..n). `integer`: the output's type is an integer one (values
// truncate toward zero, as ONNX's reference casts them).
inline double value(Function f, const double* v, int n, bool integer) {
  double y = v[0];
  switch (f) {
    case Function::Max:
      for (int i = 1; i < n; ++i) y = v[i] > y || std::isnan(v[i]) ? v[i] : y;
      return y;
    case Function::Min:
      for (int i = 1; i < n; ++i) y = v[i] < y || std::isnan(v[i]) ? v[i] : y;
      return y;
    case Function::Sum:
    case Function::Mean:
      for (int i = 1; i < n; ++i) y += v[i];
      return f == Function::Mean ? y / n : y;
    case Function::PRelu:
      return v[0] > 0 ? v[0] : v[1] * v[0];
    case Function::Mod:
    case Function::FMod:
      return mod(v[0], v[1], f == Function::FMod, integer);
    case Function::Pow:
      y = std::pow(v[0], v[1]);
      return integer && std::isfinite(y) ? std::trunc(y) : y;
  }
  return y;
}

// dy/dv[i] for every operand at one element whose output is y (see the header's comment).
inline void derivatives(Function f, const double* v, int n, double y, double* d) {
  switch (f) {
    case Function::Max:
    case Function::Min: {
      int ties = 0;
      for (int i = 0; i < n; ++i) ties += v[i] == y;
      for (int i = 0; i < n; ++i) d[i] = v[i] == y ? 1.0 / ties : 0.0;
      return;
    }
    case Function::Sum:
    case Function::Mean:
      for (int i = 0; i < n; ++i) d[i] = f == Function::Mean ? 1.0 / n : 1.0;
      return;
    case Function::PRelu:
      d[0] = v[0] > 0 ? 1.0 : v[1];
      d[1] = v[0] > 0 ? 0.0 : v[0];
      return;
    case Function::Mod:
    case Function::FMod: {
      const double q = v[0] / v[1];
      d[0] = 1;
      d[1] = -(f == Function::Mod ? std::floor(q) : std::trunc(q));
      return;
    }
    case Function::Pow:
      d[0] = v[1] == 0 ? 0.0 : v[1] * std::pow(v[0], v[1] - 1);
      d[1] = v[0] == 0 && v[1] >= 0 ? 0.0 : y * std::log(v[0]);
      return;
  }
}

// The operands of a node: its inputs, then the `scalar` attribute as one element of no dims.
struct Operands {
  std::vector<const double*> values;
  std::vector<std::vector<std::int64_t>> sizes;
};

inline Operands operands(const Arithmetic& a, std::vector<const double*> in,
                         std::vector<std::vector<std::int64_t>> in_sizes) {
  Operands o{std::move(in), std::move(in_sizes)};
  if (a.scalar) {
    o.values.push_back(&*a.scalar);
    o.sizes.emplace_back();
  }
  return o;
}

// The forward pass: inputs `in` (sizes `in_sizes`, broadcast to `out_sizes`) to `out`.
inline void forward(const Arithmetic& a, const std::vector<const double*>& in,
                    const std::vector<std::vector<std::int64_t>>& in_sizes,
                    const std::vector<std::int64_t>& out_sizes, bool integer, double* out) {
  const Operands o = operands(a, in, in_sizes);
  const int n = static_cast<int>(o.values.size());
  std::vector<double> v(static_cast<std::size_t>(n));
  mask_kernels::for_each_broadcast(out_sizes, o.sizes,
                                   [&](std::int64_t e, const std::vector<std::int64_t>& at) {
                                     for (int i = 0; i < n; ++i) v[i] = o.values[i][at[i]];
                                     out[e] = value(a.function, v.data(), n, integer);
                                   });
}

// The backward pass: grads[i] += dy/d(input i) * dout, summed over the dims input i is broadcast
// along (null: no gradient wanted). The output is recomputed from the inputs.
template <typename G>
void backward(const Arithmetic& a, const std::vector<const double*>& in,
              const std::vector<std::vector<std::int64_t>>& in_sizes,
              const std::vector<std::int64_t>& out_sizes, const G* dout,
              const std::vector<G*>& grads) {
  const Operands o = operands(a, in, in_sizes);
  const int n = static_cast<int>(o.values.size());
  std::vector<double> v(static_cast<std::size_t>(n)), d(static_cast<std::size_t>(n));
  mask_kernels::for_each_broadcast(
      out_sizes, o.sizes, [&](std::int64_t e, const std::vector<std::int64_t>& at) {
        for (int i = 0; i < n; ++i) v[i] = o.values[i][at[i]];
        derivatives(a.function, v.data(), n, value(a.function, v.data(), n, false), d.data());
        for (std::size_t i = 0; i < grads.size(); ++i)
          if (grads[i]) grads[i][at[i]] += static_cast<G>(d[i] * static_cast<double>(dout[e]));
      });
}

}  // namespace arithmetic
}  // namespace unity
