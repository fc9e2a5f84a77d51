#pragma once
// Large-model plans (paper 5.4, extended): a model's segment chain (layer_segments.h) is cut into
// pipeline stages, each stage replicated over data-parallel copies, and each segment planned on the
// devices of one stage replica - by Megatron-LM's tensor parallelism in expert mode, by the joint
// substitution search (seeded with it) in joint mode, once per segment kind and replica size. The
// planner searches the layout around that: replica size, stages, micro-batches, interleaved
// chunks, activation recomputation, ZeRO stage and sequence parallelism, costing each with the
// 1F1B schedule (pipeline_cost.h), point-to-point activations on the links they cross, the
// data-parallel gradient synchronisation and the optimizer step, and keeping the fastest layout
// that fits every device's memory (the smallest overflow when none fits).
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/cost/flop_count.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/mapping/machine_view.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/pipeline/device_order.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/core/rules/rule.h"
#include "unity/core/search/search_observer.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

struct PipelineOptions {
  bool joint = false;     // segments searched with the rules (else Megatron-LM's layout)
  LayoutRequest request;  // what the user fixed
  Optimizer optimizer = Optimizer::Adam;
  const RuleSet* rules = nullptr;  // joint: the rules (null: the built-in set)
  double alpha = 1.05;
  std::int64_t budget = 200;  // joint: candidates per segment search
  std::vector<RuleLocation> vetoes;
  SearchObserver* observer = nullptr;  // progress of the segment searches
  const CancelFlag* cancel = nullptr;
  // Past this, layouts not yet evaluated are skipped and segment searches stop with their best so
  // far (at least one layout is evaluated); none: no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Cost every layout in enumeration order instead of best-first by a lower bound, skipping
  // none (what the tests hold the bounded search to: the same plan).
  bool exhaustive = false;
  // Measured operator times (a calibrated machine's profiles) instead of the analytic ones.
  std::shared_ptr<const ProfileSource> profiles;
  // How model_flops counts a causal attention (flop_count.h): the figure reported, not the time.
  FlopCount flop_count = FlopCount::Full;
  // Where given, why the first micro-batch size the model's segments do not take was refused
  // (a Reshape holding the batch where the samples cannot be followed): what a caller says when
  // no layout is left.
  std::string* refused_batch = nullptr;
};

// One pipeline chunk: consecutive segments on one pipeline rank (v chunks per rank interleaved).
struct StagePlan {
  int rank = 0;  // pipeline rank: devices [rank x replica x data-parallel, ...)
  int first_segment = 0, last_segment = 0;  // inclusive
  int first_layer = 0, last_layer = 0;      // inclusive
  std::string first_node, last_node;
  double forward = 0;  // seconds per micro-batch (recomputation in backward)
  double backward = 0;
  double p2p = 0;         // seconds per micro-batch sending and receiving activations
  double parameters = 0;  // weight elements per device
  // Of forward and backward, the expert all-to-alls and the context-parallel K/V exchange
  // (pipeline_cost.h): what the timeline draws in the chunk's communication lane.
  ChunkExchanges exchanges;
};

// How one kind of segment runs on the devices of a stage replica: its PCG for one micro-batch
// (named after the kind's first segment) and the machine view of every placed operator, devices
// 0..tensor_parallel-1. What the executor lowers for each segment of that kind.
struct SegmentKindPlan {
  Graph pcg;
  std::map<NodeId, MachineView> views;
};

struct PipelinePlan {
  int tensor_parallel = 1;  // devices of one stage replica (of one sequence shard's)
  int pipeline_stages = 1;
  int data_parallel = 1;
  int micro_batches = 1;
  std::int64_t micro_batch_size = 1;
  int interleave = 1;
  Recompute recompute = Recompute::None;
  RecomputeModules recompute_modules;  // what selective recomputation runs again
  int zero_stage = 0;
  bool sequence_parallel = false;
  bool overlap_grad_reduce = false;  // data-parallel communication behind compute
  bool tp_comm_overlap = false;      // tensor-parallel collectives pipelined with the GEMMs
  DeviceOrder device_order = DeviceOrder::PipelineOutermost;
  DataType dtype = DataType::Float32;
  // Expert parallelism (mixture-of-experts models): the experts spread over this many devices of
  // a pipeline rank (tensor_parallel x a share of the data-parallel copies; Megatron-Core's EP
  // with ETP 1), each expert's weights synchronised over the expert_data_parallel devices holding
  // it; tokens sent to their experts and back by all-to-all. 1: the replica's own split.
  // With expert_tensor_parallel = tensor_parallel each expert's FFN is split over the replica as
  // a dense MLP's, and expert_parallel (1: none) spreads the experts over copies: Megatron-Core's
  // EP with ETP = TP.
  int expert_parallel = 1;
  int expert_tensor_parallel = 1;
  int expert_data_parallel = 1;
  TokenDispatcher token_dispatcher = TokenDispatcher::AllToAll;
  bool ep_comm_overlap = false;  // all-to-alls behind another micro-batch's compute
  double alltoall_time = 0;      // seconds of all-to-all per iteration on the busiest rank
  // With expert_tensor_parallel > 1 behind an all-to-all: the slices' exchange of the routed
  // tokens beyond the replica's own split, seconds per iteration on the busiest rank.
  double expert_slice_time = 0;
  double alltoall_bytes = 0;             // bytes all devices send in all-to-alls per iteration
  double alltoall_inter_node_bytes = 0;  // of those, to a device of another node
  std::int64_t experts = 0;              // per mixture-of-experts layer (0: none)
  std::int64_t top_k = 0;                // experts each token is routed to
  // The router's node limit: a token's experts from its best route_group_top_k of route_groups
  // contiguous groups (token_dispatch.h; 0: none).
  std::int64_t route_groups = 0, route_group_top_k = 0;
  // Context parallelism: each sequence split over this many devices (a stage replica is
  // tensor_parallel x context_parallel devices), its attentions' keys and values exchanged among
  // them (context_exchange.h). The weights are synchronised over data_parallel x context_parallel.
  int context_parallel = 1;
  ContextExchange context_exchange = ContextExchange::Ring;
  double cp_time = 0;   // seconds of that exchange left exposed per iteration, the busiest rank
  double cp_bytes = 0;  // bytes all devices send in it per iteration

  // The embedding and the loss counted as layers in the stages' layer counts (LayoutRequest).
  bool embedding_in_split = false;
  bool loss_in_split = false;

  PipelineGrid grid() const {
    return {tensor_parallel, pipeline_stages, data_parallel, device_order, context_parallel};
  }
  // The experts' grid as Megatron-Core folds it into a stage's devices (TP x CP x DP = ETP x EP x
  // EDP): Unity's expert_parallel 1 with ETP 1 is the replica's own split by expert, EP = TP.
  struct ExpertGrid {
    int ep = 1, etp = 1, edp = 1;
  };
  ExpertGrid expert_grid() const {
    ExpertGrid g;
    g.etp = std::max(1, expert_tensor_parallel);
    g.ep = expert_parallel > 1 ? expert_parallel : g.etp > 1 ? 1 : tensor_parallel;
    g.edp = tensor_parallel * context_parallel * data_parallel / (g.ep * g.etp);
    return g;
  }

  std::vector<StagePlan> chunks;             // pipeline_stages x interleave, in model order
  std::vector<MemoryBreakdown> rank_memory;  // per pipeline rank, one device
  double iteration_time = 0;                 // seconds
  double pipeline_time = 0;                  // of which forward and backward of every micro-batch
  double bubble_time = 0;                    // of pipeline_time, waiting
  double bubble_fraction = 0;
  double compute_time = 0;         // the busiest rank's compute over the iteration
  double communication_time = 0;   // its collectives, point-to-point and gradient synchronisation
  double sync_time = 0;            // data-parallel gradient synchronisation (ZeRO traffic
                                   // included) left exposed
  double update_time = 0;          // optimizer step
  double communication_bytes = 0;  // bytes all devices send per iteration
  double peak_memory = 0;          // bytes, the fullest device
  bool fits = false;
  double model_flops = 0;  // per iteration, Megatron-LM's count (recomputation included)
  FlopCount flop_count = FlopCount::Full;  // how model_flops counts a causal attention
  ExpertLoad expert_load;                  // the load the experts were costed at (stated)
  bool grad_reduce_in_bf16 = false;        // gradients kept and reduced in bf16 (training_setup.h)
  bool fp8_param_gather = false;           // fp8 GEMMs' weights held in fp8 (training_setup.h)
  double tflops_per_device = 0;
  // Per pipeline rank, its data-parallel synchronisation (pipeline_cost.h's DataSync): seconds
  // of communication in all, and of those the seconds added to the iteration (sync_time is the
  // largest). What the timeline draws; empty in plans written before them.
  std::vector<double> rank_sync_total;
  std::vector<double> rank_sync_exposed;
  // Per pipeline rank, the weight elements of its last gradient bucket (pipeline_cost.h's
  // last_gradient_bucket): what its overlapped reduce and gather leave exposed at the least.
  std::vector<double> rank_last_bucket;
  std::vector<std::string> segment_plans;    // per segment kind: how its replica is planned
  std::vector<SegmentKindPlan> kind_plans;   // per segment kind: the replica's PCG and views
  std::vector<AppliedSubstitution> applied;  // per segment kind's plan, the rules applied
  std::int64_t layouts_evaluated = 0;
  std::int64_t candidates_evaluated = 0;  // segment-search candidates
};

// Whether the model has a chain of at least two segments (what pipeline stages need).
bool can_pipeline(const Graph& model);

// The best layout for the model (global batch: model.batch_size) on the whole machine. Throws
// InputError when the request cannot be met ("--tp 3 does not divide a node of 8 devices",
// "--pp 200: the model has 97 segments"). nullopt when no layout exists at all.
std::optional<PipelinePlan> plan_pipeline(const Graph& model, const MachineSpec& machine,
                                          const PipelineOptions& options);

}  // namespace unity
