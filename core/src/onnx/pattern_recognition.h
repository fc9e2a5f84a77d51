#pragma once
// Subgraphs that exporters emit for one operator of ours:
//  - LayerNorm decomposed (opset < 17): ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
//    then optionally Mul gamma and Add beta;
//  - RMSNorm (Llama's): Pow 2, ReduceMean, Add eps, Sqrt, then Div x by it or Reciprocal (or
//    Div 1 by it) and Mul x, then Mul gamma -> LayerNorm with rms = 1;
//  - GELU decomposed: Div sqrt(2) (or Mul 1/sqrt(2)), Erf, Add 1, and the two Muls by x and 0.5 in
//    either order;
//  - MatMul by a 2-D weight followed by Add of a 1-D bias -> Linear with bias;
//  - Conv followed by BatchNormalization (inference statistics) -> one Conv2D with a bias, which is
//    what BatchNorm folding makes of it.
// Matching is structural (constants are read from initializers and Constant nodes) and runs once
// before the import; a match is emitted when the import reaches its first node, where the checks
// that need shapes are made. Every intermediate value must stay inside the match.
#include <map>
#include <string>
#include <vector>

#include "onnx/import_context.h"
#include "onnx/onnx_model_reader.h"

namespace unity::onnxio {

struct PatternMatch {
  enum class Kind { LayerNorm, RmsNorm, Gelu, LinearBias, ConvBatchNorm };
  Kind kind = Kind::LayerNorm;
  std::vector<int> nodes;  // every node the fused operator replaces
  std::string input;       // the activation it reads
  std::string output;      // the value it produces
  std::string name;        // for the fused operator
  // LayerNorm, RmsNorm (gamma only)
  std::vector<std::int64_t> axes;
  std::string gamma, beta;  // empty when absent
  double epsilon = 1e-5;
  // LinearBias: the MatMul's weight and the bias; ConvBatchNorm: the Conv node and the bias value
  std::string weight, bias;
  int conv_node = -1;
};

// Matches keyed by their first node (the import visits nodes in file order, which ONNX requires
// to be topological).
std::map<int, PatternMatch> find_patterns(const OnnxModel& model);

// Emits the fused operator and binds its output. Returns false, having added nothing, when a check
// that needs shapes fails (the nodes are then imported one by one).
bool emit_pattern(ImportContext& ctx, const PatternMatch& match);

}  // namespace unity::onnxio
