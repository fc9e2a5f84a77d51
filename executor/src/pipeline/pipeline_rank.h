#pragma once
// What one rank of a pipelined run holds: the programs of its model chunks (each lowered for one
// device and one micro-batch), an engine per micro-batch it keeps in flight (one engine per chunk
// when activations are recomputed), the inputs stashed for recomputation, and with ZeRO its shard
// of each chunk's weights and optimizer state.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../runtime/engine.h"
#include "unity/core/layer_segments.h"
#include "unity/core/pipeline_schedule.h"
#include "unity/core/plan.h"

namespace unity::executor::detail {

// A chunk of the model as every rank knows it (names and sizes, for collecting weights).
struct ChunkInfo {
  ChunkGraph graph;
  int owner = 0;  // world rank of its first data-parallel copy
  std::vector<std::pair<std::string, std::int64_t>> weights;  // name, elements
};

// A chunk this rank runs.
struct LocalChunk {
  int model_chunk = 0;
  std::unique_ptr<Program> program;  // engines keep a reference: its address must not move
  std::vector<std::unique_ptr<Engine>> engines;  // [0] owns the weights
  std::vector<void*> stash;                      // recomputation: the input per in-flight slot
  std::size_t input_bytes = 0;                   // the incoming activation (0: the first chunk)
  std::size_t output_bytes = 0;                  // the outgoing one (0: the last chunk)
  // ZeRO: the chunk's weights as one flat vector, padded to the copies; this rank's shard.
  std::vector<Slot*> weights;
  std::int64_t flat = 0, shard = 0;
  float* flat_buffer = nullptr;    // gradients packed for reduce-scatter / weights all-gathered
  float* shard_weights = nullptr;  // the copy of its shard the optimizer updates
  float* shard_gradients = nullptr;
  float* shard_incoming = nullptr;  // ZeRO 2/3: one micro-batch's reduce-scattered gradients
  float* m = nullptr;
  float* v = nullptr;
};

struct PipelineRank {
  // First, so that they outlive the engines.
  std::unique_ptr<Communicator> local_comm;
  std::unique_ptr<DeviceMemory> memory;  // staging, stash, ZeRO buffers
  const PipelinePlan* plan = nullptr;
  int rank = 0, stage = 0, copy = 0;
  int stages = 1, copies = 1, micro_batches = 1, interleave = 1;
  std::int64_t micro_batch_size = 1;
  bool recompute = false;         // full recomputation
  int zero = 0;                   // ZeRO stage as run (0 with one copy)
  std::vector<ChunkInfo> chunks;  // every model chunk
  std::vector<LocalChunk> local;  // this rank's, by its chunk index
  std::vector<PipelineAction> schedule;
  std::map<std::pair<int, int>, int> slot;  // (local chunk, micro-batch) -> engine / stash slot
  std::vector<int> copy_group;              // the ranks of this stage's copies

  int world_rank(int stage_, int copy_) const { return stage_ * copies + copy_; }
  // The engine that runs micro-batch `mb` of local chunk `j`.
  Engine& engine(int j, int mb) {
    auto& c = local[j];
    return *c.engines[recompute ? 0 : slot.at({j, mb})];
  }
};

// Builds this rank's part (collective over nothing: every rank builds its own).
std::unique_ptr<PipelineRank> make_pipeline_rank(const Plan& plan, const Graph& model, int rank,
                                                 DeviceBackend& backend, std::uint64_t seed);

}  // namespace unity::executor::detail
