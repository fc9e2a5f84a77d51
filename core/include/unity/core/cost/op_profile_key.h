#pragma once
// The one key under which a measured operator time is stored and looked up, by every measurer
// (`unity calibrate`'s per-operator measurements, a profiled `unity run --project`) and every
// reader (the project's profiles and the profile files the cost model reads).
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity {

// What identifies the work of one task of `node`: its op type, its attributes, and the piece
// shapes (size / degree per dimension) and types of its inputs and outputs, with "+grad" on the
// inputs whose gradient the backward pass computes (a first layer computes none, so its backward
// is half the work); not its name, id or replica degree. Two nodes with equal keys run the same
// kernels on the same amount of data.
// Example: "Linear(use_bias=1) float32[64,784] float32[784,512]+grad -> float32[64,512]".
std::string op_profile_key(const Graph& graph, NodeId node);

// Whether the executor computes the gradient of `tensor`: it depends on a floating Weight.
bool needs_gradient(const Graph& graph, TensorRef tensor);

}  // namespace unity
