// The Arithmetic operator (unity/core/ops/arithmetic.h: max, min, sum, mean, prelu, mod, fmod and
// pow of broadcast operands): its definition, shape inference and work. Its operands broadcast as
// the mask operators' do (shape_rules::broadcast_operands): a dim every operand has at one size
// keeps its degree, a broadcast dim has degree 1 and costs the operand a copy per partition.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "shapes/shape_rules.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/arithmetic.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph.h"

namespace unity {
namespace {

using shape_rules::fail;
namespace ar = arithmetic;

std::vector<ParallelTensorShape> infer(const Operator& op,
                                       const std::vector<ParallelTensorShape>& in) {
  ar::Function f;
  const std::string name = op.attrs.get_string("function", "");
  if (!ar::function_of(name, f))
    fail("attribute 'function' must be one of {}, got '{}'", fmt::join(ar::function_names(), ", "),
         name);
  const std::size_t operands = in.size() + (op.attrs.has("scalar") ? 1 : 0);
  if (in.empty() || (!ar::is_variadic(f) && operands != 2))
    fail("function '{}' takes {} operands (inputs and the attribute 'scalar'), got {}", name,
         ar::is_variadic(f) ? "one or more" : "two", operands);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i].dtype == DataType::Bool)
      fail("input {} is a bool mask ({}); '{}' takes numbers", i, in[i].to_string(), name);
    // Pow's exponent may have another type than the base (ONNX's Pow: float ** int64).
    if (in[i].dtype != in[0].dtype && !(f == ar::Function::Pow && i == 1))
      fail("inputs differ in type: {} and {}", in[0].to_string(), in[i].to_string());
  }
  if (f == ar::Function::Mean && !is_floating(in[0].dtype))
    fail("mean takes floating-point inputs, got {}", in[0].to_string());
  ParallelTensorShape y = shape_rules::broadcast_operands(in, in[0].dtype);
  // PRelu's slope broadcasts to x (ONNX's unidirectional broadcasting), never x to the slope.
  if (f == ar::Function::PRelu && y.sizes() != in[0].sizes())
    fail("the slope {} must broadcast to x {}", in.size() > 1 ? in[1].to_string() : "",
         in[0].to_string());
  return {y};
}

// One step per output element and operand; pow an exp and a log. The backward computes each
// operand's derivative and sums it over the dims that operand is broadcast along (twice the
// forward's work); integer outputs have no gradient.
void work(const Graph&, const Node& n, bool, TaskWork& w) {
  const ParallelTensorShape& out = n.outputs[0];
  const double elems = static_cast<double>(out.piece_elements());
  const ar::Arithmetic a = ar::arithmetic_of(n.op);
  const double operands = static_cast<double>(n.inputs.size()) + (a.scalar ? 1 : 0);
  w.flops = elems * std::max(1.0, operands - 1);
  if (a.function == ar::Function::Pow) w.transcendentals = 2 * elems;
  w.backward_ratio = is_floating(out.dtype) ? 2 : 0;
}

}  // namespace

template <>
const OperatorDefinition& define_operator<OpType::Arithmetic>() {
  static const OperatorDefinition d{
      {OpType::Arithmetic, "Arithmetic", OpCategory::Compute, 1, kAnyInputs},
      {},
      {},
      "the `function` (max, min, sum, mean of one or more operands; prelu, mod, fmod, pow of two) "
      "of broadcast operands, the last may be the attribute `scalar`; gradients to every float "
      "operand",
      {},
      &infer,
      &work};
  return d;
}

}  // namespace unity
