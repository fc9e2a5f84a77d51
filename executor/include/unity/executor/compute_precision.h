#pragma once
// The executor computes in float32. A plan made for fp16 or bf16 (mixed precision) runs with its
// floating tensors widened to float32 on the CPU, where those types have no fast kernels; `unity
// run --json` says so (`plan_dtype`, `compute_dtype`). The numerics are then the float32 ones of
// the same model, which is what --check compares with.
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity::executor {

// The graph with every floating Weight and Input (and so every float activation) in float32.
Graph executed_graph(const Graph& plan_graph);

// "float16", "bfloat16" or "float32": what the plan's model computes in.
std::string plan_dtype(const Graph& plan_graph);

}  // namespace unity::executor
