#pragma once
// What one rank of a pipelined run holds. Its stage's model chunks, each made of one piece per
// segment, lowered for the devices of one stage replica and one micro-batch: serial with stage
// replicas of one device, else the segment kind's planned PCG and views renamed after it (the
// segment's serial graph with one tensor-parallel device), split by sequence over the replica's
// context-parallel shards (context_parallel_plan.h) when it has them. An engine per piece and
// micro-batch in flight (one for a recomputed block), the inputs stashed for recomputation, and
// with ZeRO its shard of each chunk's weights and optimizer state.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../runtime/engine.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan.h"

namespace unity::executor::detail {

// A chunk of the model as every rank knows it (names and sizes, for collecting weights).
struct ChunkInfo {
  int owner = 0;  // world rank of its first copy's first replica device
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> weights;  // name, sizes
};

// One segment of a chunk, lowered on the replica's devices.
struct Piece {
  std::unique_ptr<Program> program;  // engines keep a reference: its address must not move
  std::vector<std::unique_ptr<Engine>> engines;  // [0] owns the weights
  NodeId input = -1;                             // the activation entering (-1: none)
  TensorRef output{-1, 0};                       // the activation leaving (-1: the model's sinks)
  std::vector<int> readers;                      // replica ranks reading `input`
  // What each reader reads of it: the whole activation, or with context parallelism its sequence
  // shard's rows (handed over packed, in that region's row-major order).
  std::vector<Region> reader_regions;
  Region input_region;         // the whole activation
  std::size_t read_bytes = 0;  // of `input`, on this rank (0: it reads none)
  int holder = -1;             // replica rank holding `output` whole (its first copy)
  int holder_piece = -1;       // which piece of `output` that is
  std::size_t input_bytes = 0, output_bytes = 0;
  // Bytes an element of `input` and `output`: 4 for floats, 8 for integers (a uint8 image entering
  // the piece that casts it; held as int64), which carry no gradient back.
  int input_elem_size = 4, output_elem_size = 4;
  bool input_has_gradient() const { return input_elem_size == 4; }
  bool output_has_gradient() const { return output_elem_size == 4; }
  // Whether anything before `output` in this piece trains: a cast image's floats do not, and
  // their gradient, handed back from the next piece or stage, is dropped.
  bool output_needs_gradient = true;
  // A repeated block (a transformer layer's half) under full recomputation: one engine, and its
  // input kept per micro-batch in flight (on the devices reading it), from which its forward runs
  // again before its backward. The embedding, the head and the loss keep their activations, as
  // in Megatron-LM.
  bool recomputed = false;
  std::vector<void*> stash;  // per in-flight slot, on readers of `input`
};

// A chunk this rank runs.
struct LocalChunk {
  int model_chunk = 0;
  std::vector<Piece> pieces;
  void* input_buffer = nullptr;   // replica rank 0: the activation from the stage before
  void* output_buffer = nullptr;  // replica rank 0: the activation for the stage after
  void* input_scratch = nullptr;  // replica rank 0: another device's share of the input gradient
  std::vector<void*> hand_off;    // per piece boundary: a staging buffer the size of the activation
  // The weights this rank keeps for the chunk (every piece's), and with ZeRO their flat vector,
  // padded to the copies, and this rank's shard.
  std::vector<Slot*> weights;
  std::int64_t flat = 0, shard = 0;
  float* flat_buffer = nullptr;
  float* shard_weights = nullptr;  // the copy of its shard the optimizer updates
  float* shard_gradients = nullptr;
  float* shard_incoming = nullptr;  // ZeRO 2/3: one micro-batch's reduce-scattered gradients
  float* m = nullptr;
  float* v = nullptr;
};

struct PipelineRank {
  // First, so that they outlive the engines.
  std::unique_ptr<Communicator> replica_comm;  // the stage replica's devices
  std::unique_ptr<DeviceMemory> memory;        // staging, stash, ZeRO buffers
  const PipelinePlan* plan = nullptr;
  int rank = 0, stage = 0, copy = 0, replica_rank = 0;
  // replica: devices of a stage replica, tensor_parallel x context_parallel (PipelineGrid).
  int stages = 1, copies = 1, replica = 1, micro_batches = 1, interleave = 1;
  std::int64_t micro_batch_size = 1;
  bool recompute = false;         // full recomputation
  int zero = 0;                   // ZeRO stage as run (0 with one copy)
  std::vector<ChunkInfo> chunks;  // every model chunk
  std::vector<LocalChunk> local;  // this rank's, by its chunk index
  std::vector<PipelineAction> schedule;
  std::map<std::pair<int, int>, int> slot;  // (local chunk, micro-batch) -> engine / stash slot
  std::vector<int> copy_group;              // world ranks of this device's place in every copy
  ExpertCopies expert_copies;               // what its engines' Experts tasks spread over

  // World rank of replica device `t` of copy `c` of stage `s`.
  int world_rank(int s, int c, int t = 0) const { return plan->grid().device(s, c, t); }
  // The engine that runs micro-batch `mb` of piece `p` of local chunk `j`.
  Engine& engine(int j, int p, int mb) {
    auto& piece = local[j].pieces[p];
    return *piece.engines[piece.recomputed ? 0 : slot.at({j, mb})];
  }
};

// What segment `seg` runs on each replica of its stage: the kind's plan under the segment's names
// (tensor parallelism), else the segment's own graph on one device; split over the sequence's
// context-parallel ranks where the plan has them. `input` names its Input from the previous
// segment (empty for the first).
struct SegmentRun {
  Graph graph;
  std::map<NodeId, MachineView> views;
  std::string input;
};
SegmentRun segment_run(const PipelinePlan& pp, const Graph& model, const SegmentChain& chain,
                       int seg, std::int64_t micro_batch_size, std::int64_t sequence);

// Builds this rank's part; `world` is the run's communicator (replicas get a group of it).
std::unique_ptr<PipelineRank> make_pipeline_rank(const Plan& plan, const Graph& model,
                                                 Communicator& world, DeviceBackend& backend,
                                                 std::uint64_t seed);

}  // namespace unity::executor::detail
