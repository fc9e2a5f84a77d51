#pragma once
// The layouts the pipeline planner weighs (pipeline_planner.cpp), enumerated as grids: a grid
// fixes the devices' shape (tensor, context, pipeline and data parallelism), the micro-batches and
// the chunks per device, and holds every layout that differs from it only in what its segments
// run (recomputation, ZeRO, sequence parallelism, overlaps, expert and context parallelism).
// The grids partition the enumeration in order, so a layout's place in it is its grid's first
// index plus its own offset: the planner visits grids best-first by a lower bound and still
// breaks ties between equal plans as an in-order enumeration would.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/context_exchange.h"
#include "unity/core/pipeline/device_order.h"
#include "unity/core/pipeline/token_dispatch.h"
#include "unity/core/pipeline/training_setup.h"

namespace unity::pipeline_layouts {

// Transformer Engine's pipelined reduce-scatter overlap (pipeline_cost.h, overlapped_pass): its
// splits, and the SMs its communication holds (devices need more than these to overlap at all).
inline constexpr int kTpOverlapSplits = 4;
inline constexpr int kTpOverlapSms = 16;

// What a layout's segments run, besides recomputation and ZeRO: their cost per micro-batch.
struct SegmentOptions {
  bool sp = false;          // sequence parallelism
  bool tp_overlap = false;  // tensor-parallel collectives pipelined with the GEMMs
  DeviceOrder order = DeviceOrder::PipelineOutermost;
  // The joint search's segment plans, or Megatron-LM's (which the layout search also weighs: the
  // segment search ranks one mapping and leaves the weights' synchronisation out, which a plan
  // that keeps whole weights on each device pays once per iteration).
  bool megatron_segments = false;
  int ep = 1;  // expert parallelism: experts spread over ep devices of tp x dp (1: none)
  // Expert tensor parallelism: 1 (the experts split over the replica by expert), or tp (each
  // expert's FFN split as a dense MLP's; ep then spreads them over copies).
  int etp = 1;
  TokenDispatcher dispatcher = TokenDispatcher::AllToAll;
  bool ep_overlap = false;  // all-to-alls behind another micro-batch's compute
  ContextExchange cp_exchange = ContextExchange::Ring;
};

// A recomputation level, with the modules it runs again where it is selective.
struct RecomputeOption {
  Recompute level = Recompute::None;
  RecomputeModules modules;
};

// One layout the planner costs.
struct Layout {
  int tp = 1, pp = 1, dp = 1, m = 1, v = 1;
  std::int64_t b = 1;
  Recompute recompute = Recompute::None;
  RecomputeModules modules;  // what selective recomputation runs again
  int zero = 0;
  bool sp = false;
  bool overlap = false;     // data-parallel reduce (and ZeRO-1's gather) behind compute
  bool tp_overlap = false;  // tensor-parallel collectives pipelined with the GEMMs
  DeviceOrder order = DeviceOrder::PipelineOutermost;
  bool megatron_segments = false;  // SegmentOptions::megatron_segments
  int ep = 1;
  int etp = 1;  // SegmentOptions::etp
  TokenDispatcher dispatcher = TokenDispatcher::AllToAll;
  bool ep_overlap = false;
  int cp = 1;  // context parallelism: each sequence over cp devices (1: none)
  ContextExchange cp_exchange = ContextExchange::Ring;
  int copies() const { return dp * cp; }  // devices of a stage holding the same weights
  // Devices of a stage holding the same experts (or the same slices of them); without expert
  // parallelism each copy holds its replica's split of all of them.
  int expert_data_parallel() const { return ep > 1 ? tp * copies() / (ep * etp) : copies(); }
  PipelineGrid grid() const { return {tp, pp, dp, order, cp}; }
  void set_recompute(const RecomputeOption& o) {
    recompute = o.level;
    modules = o.modules;
  }
};

// What the layouts of one stage shape (tp x cp devices a replica, pp stages, dp copies) choose
// among besides their pipeline shape.
struct StageChoices {
  int tp = 1, cp = 1, pp = 1, dp = 1;
  bool overlap = false;
  std::vector<RecomputeOption> recomputes;
  std::vector<int> zeros;
  std::vector<SegmentOptions> segments;  // in enumeration order
};

// One grid: a stage shape with its micro-batches and chunks per device.
struct LayoutGrid {
  int stage = 0;  // index into LayoutSpace::stages()
  int m = 1, v = 1;
  std::int64_t b = 1;
  std::int64_t first = 0;  // enumeration index of its first layout
};

// What the enumeration needs to know of the model and the request.
struct LayoutFacts {
  std::string model;          // its name, for messages
  std::int64_t batch = 0;     // the model's global batch
  int segments = 0;           // of its chain
  int layers = 0;             // of its chain
  std::int64_t sequence = 0;  // tokens of a sample (0: no attention)
  // The greatest number every attention's heads and key/value groups divide into (0: no
  // attention): a searched tensor-parallel degree divides it, as Megatron-Core requires.
  std::int64_t head_groups = 0;
  std::int64_t experts = 0;  // experts of an MoE layer (0: none)
  bool transformer = false;  // has attention: sequence and context parallelism apply
  // An attention attends within a sliding window shorter than the sequence: Transformer Engine's
  // context parallelism then all-gathers the keys and values (or splits the heads), never rings
  // them, so a launchable plan's context exchange is the all-gather.
  bool sliding_window = false;
  // Multi-head latent attention (keys and values of different head sizes): Transformer Engine's
  // context parallelism takes it only by a ring (context_parallel.py refuses the all-gather), so
  // a launchable plan's context exchange is the ring.
  bool latent_attention = false;
  // The experts run Megatron-Core's grouped GEMM (bf16 and fp8 plans), the only place it
  // recomputes their activation (moe_act): a launchable fp16 or fp32 plan does not take it.
  bool grouped_gemm = true;
  // The model trains in bf16 or fp16 (fp8 GEMMs included), which Megatron-Core's all-to-all
  // overlap (--overlap-moe-expert-parallel-comm) needs: a launchable fp32 plan does not take it.
  bool half_precision = true;
  bool joint = false;  // the joint search (else Megatron-LM's expert mode)
  // An operator that normalises over the whole batch (a BatchNorm, described): the batch is then
  // not split, neither over data-parallel copies nor into micro-batches (empty: none).
  std::string batch_statistics;
};

class LayoutSpace {
 public:
  // Every layout the request allows. Throws InputError when what was fixed cannot be met.
  LayoutSpace(const LayoutFacts& facts, const LayoutRequest& request, const MachineSpec& machine);

  const std::vector<StageChoices>& stages() const { return stages_; }
  const std::vector<LayoutGrid>& grids() const { return grids_; }
  std::int64_t size() const { return size_; }
  // Layouts in a grid: recomputations x ZeRO stages x segment options.
  std::int64_t count(const LayoutGrid& g) const;
  // The i-th layout of grid g, 0 <= i < count(g), in enumeration order.
  Layout layout(const LayoutGrid& g, std::int64_t i) const;
  // Whether the request takes a layout its grid enumerates: a launchable plan overlaps its
  // all-to-alls with another micro-batch (Megatron-Core's --overlap-moe-expert-parallel-comm)
  // only without full recomputation and, where it pipelines, with virtual stages
  // (TransformerConfig asserts both). The planner costs no other.
  bool takes(const Layout& l) const;

 private:
  std::vector<int> context_parallel_degrees(int tp) const;
  std::vector<int> expert_parallel_degrees(int tp, int dp, int etp) const;
  std::vector<int> expert_tensor_parallel_degrees(int tp) const;
  void add_stages(int tp, int cp);
  void add_grids(int tp, int cp, int pp, int dp, std::int64_t per_replica);

  LayoutFacts facts_;
  LayoutRequest request_;
  const MachineSpec& machine_;
  std::vector<StageChoices> stages_;
  std::vector<LayoutGrid> grids_;
  std::int64_t size_ = 0;
};

}  // namespace unity::pipeline_layouts
