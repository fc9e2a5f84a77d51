#pragma once
// What a segment's plan hands on to the next segment, and that plan made to hand it on whole. The
// executor passes a stage's activation from one device that holds it whole (pipeline_rank.cpp);
// a tensor-parallel plan the search made may leave it split over the replica's devices, or end
// in partial sums, and an unrolled LSTM leaves outputs nobody reads beside it.
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

// The sinks of `plan` (a segment's, its nodes named as in `model`) that the segment hands on: not
// the loss, nor an output that the model reads nowhere either (an unrolled LSTM's first forget
// gate). One for every segment but the last, which has none.
std::vector<TensorRef> handed_on_outputs(const Graph& plan, const Graph& model);

// Adds to `plan` what makes each tensor it hands on whole on one device: Reduces for its partial
// sums, Combines for its split dims (named after the tensor, ".whole"). Copies stay copies.
void hand_on_whole(Graph& plan, const Graph& model);

}  // namespace unity
