#pragma once
// The dtype a model computes in: its floating weights and inputs (mixed-precision training keeps
// fp32 master weights beside them; the memory model counts those, the graph does not hold them).
#include "unity/core/pcg/graph.h"

namespace unity {

// The dtype of the model's floating weights (of its floating inputs when it has no weights);
// Float32 when it has neither.
DataType compute_dtype(const Graph& graph);
// Every floating Weight and Input becomes `dtype`, and shapes are inferred again, so every float
// activation follows.
void set_compute_dtype(Graph& graph, DataType dtype);

// FP8 training as Transformer Engine runs it (Micikevicius et al., "FP8 Formats for Deep
// Learning", 2022): the GEMMs of every Linear and of each attention's projections take fp8 inputs
// with per-tensor scales and accumulate in fp32; everything else, and the activations and weights
// between operators, stays bf16 (with fp32 master weights). The graph computes in bf16 and each of
// those operators carries `fp8` = 1.
void set_fp8_gemms(Graph& graph);
// Whether the operator's GEMMs run in fp8 (set_fp8_gemms marked it).
bool has_fp8_gemms(const Node& node);
// Whether any operator of the graph does.
bool has_fp8_gemms(const Graph& graph);
// The names --dtype takes: every DataType's floating name, and "fp8" (set_fp8_gemms).
void apply_dtype_name(Graph& graph, const std::string& name);

}  // namespace unity
