// The ONNX operators Unity deliberately does not import. The test for a place in the table: a
// model being trained on a GPU cluster has no use for the operator, or a static plan cannot hold
// it. Operators that training graphs use (ConvTranspose, Resize, TopK, Gather*, Scatter*, CumSum,
// the activations, 1-D/3-D convolution, ...) are not here: they are missing, not out of scope.
#include "unity/core/onnx/onnx_operator_scope.h"

#include <string>

#include "onnx/onnx_op_mapping.h"

namespace unity {
namespace {
namespace scope_table {  // a name of its own: jumbo builds share one anonymous namespace

constexpr std::string_view kInferenceOnly = "inference-only";
constexpr std::string_view kDataDependent = "data-dependent output shape";
constexpr std::string_view kControlFlow = "control flow";
constexpr std::string_view kRandom = "random";
constexpr std::string_view kSequences = "sequence/optional types";
constexpr std::string_view kNotTraining = "not a training operator";
constexpr std::string_view kOptimizerStep = "optimizer step";

constexpr std::string_view kQuantized =
    "quantized integer arithmetic of inference; training runs in floating point";
constexpr std::string_view kStrings = "works on strings, which Unity's tensors do not hold";
constexpr std::string_view kSequenceValues =
    "its values are lists of tensors or may be absent; Unity's graphs pass tensors of static shape";
constexpr std::string_view kOptimizer =
    "a training step written into the graph; Unity differentiates the model and applies the "
    "optimizer itself: import the forward graph";

struct Entry {
  std::string_view op_type;
  OnnxOutOfScope scope;
};

constexpr Entry kDefaultDomain[] = {
    {"QuantizeLinear", {kInferenceOnly, kQuantized}},
    {"DequantizeLinear", {kInferenceOnly, kQuantized}},
    {"DynamicQuantizeLinear", {kInferenceOnly, kQuantized}},
    {"QLinearConv", {kInferenceOnly, kQuantized}},
    {"QLinearMatMul", {kInferenceOnly, kQuantized}},
    {"ConvInteger", {kInferenceOnly, kQuantized}},
    {"MatMulInteger", {kInferenceOnly, kQuantized}},
    {"NonMaxSuppression",
     {kInferenceOnly,
      "detection post-processing: keeps the best boxes after the network has run (how many "
      "depends on the scores)"}},
    {"RoiAlign",
     {kInferenceOnly,
      "pools detector regions; in an exported detector its boxes come from NonMaxSuppression"}},
    {"StringNormalizer", {kInferenceOnly, kStrings}},
    {"StringConcat", {kInferenceOnly, kStrings}},
    {"StringSplit", {kInferenceOnly, kStrings}},
    {"RegexFullMatch", {kInferenceOnly, kStrings}},
    {"TfIdfVectorizer",
     {kInferenceOnly, "text feature extraction (n-gram counts) that runs before a model"}},
    {"ImageDecoder", {kInferenceOnly, "decodes image files: data loading, before the model"}},
    {"NonZero",
     {kDataDependent,
      "how many elements are nonzero, and so the output's size, depends on the input's values, "
      "which a static plan cannot lay out"}},
    {"Unique",
     {kDataDependent,
      "how many values are distinct, and so the output's size, depends on the input's values, "
      "which a static plan cannot lay out"}},
    {"Compress",
     {kDataDependent,
      "how many slices the condition keeps, and so the output's size, depends on its values, "
      "which a static plan cannot lay out"}},
    {"Scan",
     {kControlFlow,
      "iterates a subgraph over an axis; export recurrent layers as LSTM/GRU or unrolled"}},
    {"Multinomial",
     {kRandom, "samples indices from a distribution, as text generation does; training does not"}},
    {"SequenceMap", {kSequences, kSequenceValues}},
    {"Optional", {kSequences, kSequenceValues}},
    {"OptionalGetElement", {kSequences, kSequenceValues}},
    {"OptionalHasElement", {kSequences, kSequenceValues}},
    {"BitShift",
     {kNotTraining,
      "bit arithmetic on unsigned integers (quantized kernels); no floating-point value or "
      "gradient passes through it"}},
};

constexpr OnnxOutOfScope kClassicalMl = {
    kNotTraining,
    "classical machine learning (ai.onnx.ml: trees, SVMs, encoders), not a network trained by "
    "gradients"};

constexpr Entry kTrainingDomain[] = {
    {"Adagrad", {kOptimizerStep, kOptimizer}},
    {"Adam", {kOptimizerStep, kOptimizer}},
    {"Momentum", {kOptimizerStep, kOptimizer}},
    {"Gradient", {kOptimizerStep, kOptimizer}},
};

bool default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

}  // namespace scope_table
}  // namespace

const OnnxOutOfScope* onnx_out_of_scope(std::string_view domain, std::string_view op_type) {
  using namespace scope_table;
  if (domain == "ai.onnx.ml") return &kClassicalMl;
  if (domain == "ai.onnx.preview.training") {
    for (const Entry& e : kTrainingDomain)
      if (e.op_type == op_type) return &e.scope;
    return nullptr;
  }
  if (!default_domain(domain)) return nullptr;
  for (const Entry& e : kDefaultDomain)
    if (e.op_type == op_type) return &e.scope;
  return nullptr;
}

OnnxOperatorStatus onnx_operator_status(std::string_view domain, std::string_view op_type) {
  using scope_table::default_domain;
  if (default_domain(domain) && onnxio::is_supported_op_type(op_type))
    return OnnxOperatorStatus::Imported;
  if (onnx_out_of_scope(domain, op_type)) return OnnxOperatorStatus::OutOfScope;
  return OnnxOperatorStatus::Missing;
}

}  // namespace unity
