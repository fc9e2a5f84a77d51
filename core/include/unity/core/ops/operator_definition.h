#pragma once
// An operator in one place. Each operator of op_list.h has a definition: its name, category and
// inputs, and for the families that are described by data rather than code, that data. A
// point-wise operator (y = f(x) element by element) is entirely its function, derivative and
// parameters: shape inference, work, which replicas it may read, the CPU kernel, the rule
// evaluator, the verifier's axioms and the ONNX import all follow from them, so such an operator
// is one file (core/src/ops/<name>.cpp) and one line in op_list.h. Operators without a family
// description are handled where each concern lives (shape_inference_*.cpp, task_work.cpp, ...).
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "unity/core/pcg/op_type.h"
#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity {

class Graph;
struct Node;
struct TaskWork;

// A real parameter of a point-wise operator (LeakyRelu's alpha), kept as a float attribute.
struct PointwiseParameter {
  std::string_view name;                // the attribute's name in the PCG
  std::optional<double> default_value;  // empty: the attribute is required
  std::string_view onnx_name = {};      // the ONNX attribute it is imported from ("": none)
};

// y = f(x) on every element, with dy/dx for the backward pass. Both take the parameters in the
// order they are declared. Evaluated in double by the rule evaluator and in float by the kernels.
struct PointwiseFunction {
  double (*value)(double x, const double* params) = nullptr;
  // The derivative at x, given y = value(x).
  double (*derivative)(double x, double y, const double* params) = nullptr;
  std::vector<PointwiseParameter> parameters;
  // Evaluates an exp, log, tanh or erf per element: the cost model charges
  // DeviceSpec::transcendental_seconds for each (erf_time() where `erf`).
  bool transcendental = false;
  // f(a + b) = f(a) + f(b): the operator may read partial sums and commutes with a Reduce.
  bool linear = false;
  // Transcendentals the derivative evaluates per element: none where it takes y alone (sigmoid's
  // y (1 - y), tanh's, exp's, ELU's) or none at all (log's 1 / x); GELU's takes an erf and an
  // exp. Negative: as many as the forward.
  int backward_transcendentals = -1;
  // The forward's transcendental is an erf (GELU's, Erf's), and of the derivative's,
  // backward_erfs are erfs beside its backward_transcendentals exps.
  bool erf = false;
  int backward_erfs = 0;
};

// y = f(x) on every slice along one axis (the `axis` attribute, default -1, the last), a slice of
// the same length out: the axis is never split (degree 1), every other dim may be. Evaluated in
// double on the slice, by the rule evaluator and the kernels alike. Real parameters as a point-wise
// operator's (CumSum's exclusive and reverse), passed in their declared order.
struct AxisFunction {
  void (*forward)(const double* x, double* y, std::int64_t n, const double* params) = nullptr;
  // dx = the Jacobian's transpose times dy, for one slice (overwrites dx).
  void (*backward)(const double* x, const double* y, const double* dy, double* dx, std::int64_t n,
                   const double* params) = nullptr;
  double flops_per_element = 1;  // forward; the backward is counted as twice as much
  bool transcendental = false;   // an exp or log per element
  std::vector<PointwiseParameter> parameters;
  // ONNX gives the axis as the node's second input (a constant), as CumSum does, rather than as
  // an attribute (Softmax, LogSoftmax: before opset 13 over the dims from the axis on).
  bool onnx_axis_input = false;
  // ONNX fixes the axis rather than naming it (LRN normalises across the channels, dim 1).
  std::optional<int> onnx_fixed_axis = std::nullopt;
};

// A tensor on the host in double, row-major: what an operator's `evaluate` reads and writes.
struct DoubleTensor {
  std::vector<std::int64_t> sizes;
  std::vector<double> data;
};

// How an operator described in its own file splits, when it is this simple: it computes each
// slice over the last `whole_dims` dims of its (one) input on its own, into a slice of the
// output's last `output_dims` dims. A split of any dim before them passes through it to the
// output's dim of the same index, copies pass as copies, and it is not linear (it reads copies,
// never partial sums). The executor's task requests, the verifier's axioms, the rule evaluator's
// layouts and the hand-written rule `<op>_partition` (scripts/handwritten_rules.py) follow from
// it. Random is {0, 0} (every dim splits), Det {2, 0} (a matrix in, a number out).
struct SliceLayout {
  int whole_dims = 0;
  int output_dims = 0;
};

// An attribute of an operator described in its own file as rules may name it: the verifier's
// attribute slot (rules/src/verify/attribute_schema.cpp).
struct AttributeDeclaration {
  enum class Kind { Int, Real, List, Enum };
  std::string_view name;
  Kind kind = Kind::Int;
  std::vector<std::string_view> choices;   // Enum: the names it takes
  std::optional<AttrValue> default_value;  // empty: required
};

struct OperatorDefinition {
  OpInfo info;
  std::optional<PointwiseFunction> pointwise;
  // ONNX operator types imported as this operator, one node for one node (parameters from the
  // attributes named by `onnx_name`, ONNX's defaults being the parameters' defaults).
  std::vector<std::string_view> onnx_types;
  // One line for docs/operators.md and the explorer's property panel.
  std::string_view summary;
  std::optional<AxisFunction> along_axis;
  // An operator described in its own file rather than by a family: its shape inference (the
  // output shapes with their degrees, or a ShapeError naming the input and dim at fault) and the
  // work of one of its tasks (task_work asks it; `w` holds the task's bytes already).
  std::vector<ParallelTensorShape> (*infer)(const Operator& op,
                                            const std::vector<ParallelTensorShape>& in) = nullptr;
  void (*work)(const Graph& g, const Node& n, bool fused_kernels, TaskWork& w) = nullptr;
  // How it splits, where a slice layout says it (shape inference is still `infer`'s).
  std::optional<SliceLayout> slices = std::nullopt;
  // Its outputs from one copy of its inputs, in double: the rule evaluator's kernel, which checks
  // every rule that names it on random instances.
  std::vector<DoubleTensor> (*evaluate)(const Operator& op,
                                        const std::vector<DoubleTensor>& in) = nullptr;
  // The attributes rules may name (a point-wise or along-axis operator's come from its function).
  std::vector<AttributeDeclaration> attributes = {};
  // Input shapes for the verifier's random instances, given random sizes of the first input
  // (Det's makes the last two equal); null: every input of those sizes.
  std::vector<ParallelTensorShape> (*example_inputs)(std::vector<std::int64_t> sizes) = nullptr;
};

// Each operator's file defines its specialization.
template <OpType T>
const OperatorDefinition& define_operator();
#define UNITY_DECLARE_OPERATOR(name) \
  template <>                        \
  const OperatorDefinition& define_operator<OpType::name>();
UNITY_OPERATORS(UNITY_DECLARE_OPERATOR)
#undef UNITY_DECLARE_OPERATOR

const OperatorDefinition& operator_definition(OpType type);
std::span<const OperatorDefinition* const> operator_definitions();

// The point-wise function of an operator, or null.
inline const PointwiseFunction* pointwise_function(OpType type) {
  const auto& p = operator_definition(type).pointwise;
  return p ? &*p : nullptr;
}

// The slice layout of an operator, or null.
inline const SliceLayout* slice_layout(OpType type) {
  const auto& s = operator_definition(type).slices;
  return s ? &*s : nullptr;
}

// The along-axis function of an operator, or null.
inline const AxisFunction* axis_function(OpType type) {
  const auto& a = operator_definition(type).along_axis;
  return a ? &*a : nullptr;
}

// The real parameters of a point-wise or along-axis operator as its node sets them (defaults where
// it leaves them out); throws ShapeError naming a required parameter that is missing.
std::vector<double> operator_parameters(const Operator& op);
// The declared parameters of a point-wise or along-axis operator (empty for others).
const std::vector<PointwiseParameter>& declared_parameters(OpType type);

}  // namespace unity
