#pragma once
// A model as a chain of segments, the units pipeline stages are made of: the graph is cut wherever
// exactly one activation is live (a transformer has two cuts per layer, after each residual add),
// and segments of equal structure share a kind, so that each kind is planned and costed once and
// reused for every layer (Llama-3 8B: one block searched instead of 32).
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/core/shapes/batch_rescaling.h"  // rebatch: a segment's plan for another batch

namespace unity {

struct Segment {
  std::vector<NodeId> nodes;  // placed operators (not sources), topological order
  TensorRef input{-1, 0};     // the activation it reads from the segment before (none: first)
  TensorRef output{-1, 0};    // the activation it hands on (the last segment's: its sink)
  int kind = 0;
  int layer = 0;  // attention (else weighted) operators before it: which layer it starts
  // Which dim of `input` holds the samples (the one that scales with the batch: 1 for a
  // [sequence, batch, ...] activation, where it may be merged with inner dims), or none of them.
  static constexpr int kNoBatchDim = -2;       // the activation does not grow with the batch
  static constexpr int kUnknownBatchDim = -1;  // it does, but not in one dim: the batch stays
  int input_batch_dim = 0;
  std::int64_t input_batch_inner = 1;  // of that dim, the elements inside one sample
  std::string input_batch_unknown;     // kUnknownBatchDim: what loses the samples' track
};

struct SegmentChain {
  std::vector<Segment> segments;
  std::vector<int> representative;  // per kind, the first segment of that kind
  int layers = 0;                   // attention (else weighted) operators in the model
  int kinds() const { return static_cast<int>(representative.size()); }
};

// The cuts of a serial model. A graph without a cut is one segment.
SegmentChain segment_chain(const Graph& model);

// Per kind, whether more than one segment has it: the repeated blocks (a transformer's layers),
// which full recomputation re-runs, not the embedding or the head. The planner costs and the
// executor runs recomputation by this one rule.
std::vector<bool> repeated_kinds(const SegmentChain& chain);

// Segment `s` as a graph of its own, for `batch` samples: the activation entering it becomes an
// Input (its batch dim rescaled, and named in its attribute "batch_dim", -1 where it has none),
// every input whose leading dim is the model's batch gets `batch` instead, and the sizes operators
// hold follow (batch_rescaling.h). Throws ShapeError when the segment cannot take `batch`.
Graph segment_graph(const Graph& model, const Segment& s, std::int64_t batch);

// Segments first..last (a pipeline chunk) as one graph for `batch` samples: the activation entering
// segment `first` becomes an Input (`input`), and `output` is the activation the chunk hands on
// ({-1, 0} for the last chunk, which ends in the model's sinks). Sources keep their names, so the
// executor's synthetic data and weights equal the whole model's.
struct ChunkGraph {
  Graph graph;
  NodeId input = -1;
  TensorRef output{-1, 0};
};
ChunkGraph chunk_graph(const Graph& model, const SegmentChain& chain, int first, int last,
                       std::int64_t batch);

// A segment kind's plan (made on the kind's first segment) with its names made those of segment
// `seg`, as the executor runs it there and a profile names its operators: the two segments have
// the same structure, so their serial graphs list the same nodes in the same order; a node the
// plan added (a parallel operator, a substitution's) is named after the node it was made for.
Graph renamed_kind_plan(const Graph& plan, const Graph& model, const SegmentChain& chain, int seg,
                        std::int64_t batch);

// The graph (a plan of a segment) as one of `cp` context-parallel ranks runs it: each input
// holding a `sequence`-long dimension 1 holds its 1/cp shard, and every attention attends to the
// keys of all shards (the "context_parallel" attribute task_work costs). Throws ShapeError when cp
// does not divide the sequence into 2 x cp chunks, or a degree does not divide the shard.
Graph context_shard(const Graph& graph, std::int64_t sequence, int cp);

}  // namespace unity
