#pragma once
// What a training framework needs to run a plan, read from the plan (`unity export`): the model's
// shape, the parallelism (TP, PP, virtual stages, DP, sequence parallelism, the overlaps, ZeRO),
// recomputation, the batch and the precision. Only a Megatron-style layout has one: tensor
// parallelism over whole layers as Megatron-LM splits them, stages cut between layers, data
// parallelism over the rest. A plan that is not one (the joint search's own per-operator split,
// a model that is not a decoder-only transformer, a stage cut inside a layer) gets the reasons,
// one sentence each, and no spec.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "unity/core/pipeline/device_order.h"
#include "unity/core/pipeline/token_dispatch.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/core/plan/model_shape.h"
#include "unity/core/plan/plan.h"

namespace unity::launch {

struct LaunchSpec {
  ModelShape model;
  std::string model_name;  // the plan's model ("gpt-145b", "Llama-3.1-8B")
  std::string machine;
  int devices = 1;
  int devices_per_node = 1;
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;  // context parallelism: each sequence over cp devices
  ContextExchange cp_exchange = ContextExchange::Ring;
  // Mixture-of-experts layers (model.moe): Megatron-Core's expert grid over each stage's
  // devices, TP x CP x DP = ETP x EP x EDP. Unity splits experts whole (ETP 1) over its TP group
  // and, with --ep, a share of the data-parallel copies: EP is the plan's ep, or its TP where ep
  // is 1. 1 x 1 x 1 for a dense model.
  int ep = 1, etp = 1, edp = 1;
  TokenDispatcher dispatcher = TokenDispatcher::AllToAll;
  bool ep_comm_overlap = false;  // all-to-alls behind another micro-batch's compute (1F1B)
  ExpertLoad expert_load;        // dropless, or a capacity factor with padding (expert_load.h)
  int interleave = 1;            // model chunks per pipeline rank (Megatron's virtual stages)
  // Per model chunk (pp x interleave of them, in model order): the transformer layers it holds.
  std::vector<int> chunk_layers;
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;
  bool overlap_grad_reduce = false;  // and, with ZeRO, the weights' gather behind the forward
  int zero_stage = 0;
  bool grad_reduce_in_bf16 = false;  // gradients kept and reduced in bf16
  bool fp8_param_gather = false;     // fp8 GEMMs' weights held and gathered in fp8
  Recompute recompute = Recompute::None;
  RecomputeModules recompute_modules;  // what selective recomputation runs again
  std::int64_t micro_batch_size = 1;
  int micro_batches = 1;  // per iteration and data-parallel copy: the accumulation steps
  std::int64_t global_batch = 1;
  std::string dtype = "fp32";  // fp32, fp16, bf16 or fp8 (GEMMs in fp8, the rest bf16)
  std::string optimizer = "adam";
  DeviceOrder device_order = DeviceOrder::PipelineOutermost;
  double iteration_ms = 0;  // the plan's prediction
  std::string origin;       // where the plan came from ("megatron: tp8 pp8 ...")

  // Layers each pipeline rank holds (its chunks together).
  std::vector<int> stage_layers() const;
  // "tp8 pp4 dp48 v2, mbs 1 x 8, recompute full, zero 1, sp": for messages.
  std::string describe() const;
};

struct Derivation {
  std::optional<LaunchSpec> spec;
  std::vector<std::string> inexpressible;  // why there is none
};

// The launch of `plan`, or why no framework runs it as a Megatron-style layout.
Derivation launch_spec_of(const Plan& plan);

// The model shape of `plan`: its summary's, else read off its PCG (plans written before the
// summary held one); nullopt with `why` when its model is not a decoder-only transformer.
std::optional<ModelShape> plan_model_shape(const Plan& plan, std::string* why = nullptr);

}  // namespace unity::launch
