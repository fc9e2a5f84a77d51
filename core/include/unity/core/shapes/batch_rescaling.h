#pragma once
// A graph for another batch. Importers resolve every size against the batch given (`unity import
// --batch 4`), so a Reshape, an Expand, a Split or a Resize may hold a size that is the batch, or
// the batch merged with other dims: nn.MultiheadAttention's [sequence, batch x heads, head_dim]
// (the samples the outer factor), a sequence-first RNN's [sequence x batch, embed] (the inner
// one). A micro-batch, or a data-parallel copy's share of the batch, runs the same operators on
// fewer samples: their sizes follow the samples, which each tensor is tracked to hold in one dim,
// with `inner` elements of that dim inside each sample.
#include <cstdint>
#include <map>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

struct BatchPlace {
  int dim = -1;            // the dim holding the samples (-1: the tensor holds none)
  std::int64_t inner = 1;  // of that dim, the elements inside one sample (1: the innermost)
  bool known = true;       // false: its sizes follow the batch, but where is not known
};

// `graph` (a model, a segment, a segment's plan) for `to` samples where it was made for `from`.
// Its Inputs hold the samples in dim 0 when it is `from` long, or where their attributes
// "batch_dim" (-1: nowhere) and "batch_inner" say. Throws ShapeError, naming the node, where a
// size holding the samples does not scale or their place is not known where a Reshape needs it.
// `places`, if given, gets every tensor's place in `graph`.
Graph rebatch(const Graph& graph, std::int64_t from, std::int64_t to,
              std::map<TensorRef, BatchPlace>* places = nullptr);

}  // namespace unity
