// The pipeline planner's best-first layout search: grids of layouts visited in the order of a
// lower bound on their plans, a layout costed only where its bound can beat the best plan so far.
// It must choose exactly the plan that costing every layout in enumeration order chooses, while
// costing fewer of them.
#include <gtest/gtest.h>

#include <cstdio>

#include "unity/core/errors.h"
#include "unity/core/launch/launch_limits.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

void expect_same_plan(const Graph& model, const MachineSpec& machine, PipelineOptions o) {
  const auto bounded = plan_pipeline(model, machine, o);
  o.exhaustive = true;
  const auto every = plan_pipeline(model, machine, o);
  ASSERT_TRUE(bounded);
  ASSERT_TRUE(every);
  std::printf("%s on %d devices: %lld of %lld layouts costed, %.3f ms\n", model.name.c_str(),
              machine.num_devices(), static_cast<long long>(bounded->layouts_evaluated),
              static_cast<long long>(every->layouts_evaluated), every->iteration_time * 1e3);
  EXPECT_EQ(bounded->iteration_time, every->iteration_time);
  EXPECT_EQ(bounded->peak_memory, every->peak_memory);
  EXPECT_EQ(bounded->fits, every->fits);
  EXPECT_EQ(bounded->tensor_parallel, every->tensor_parallel);
  EXPECT_EQ(bounded->pipeline_stages, every->pipeline_stages);
  EXPECT_EQ(bounded->data_parallel, every->data_parallel);
  EXPECT_EQ(bounded->micro_batches, every->micro_batches);
  EXPECT_EQ(bounded->interleave, every->interleave);
  EXPECT_EQ(bounded->recompute, every->recompute);
  EXPECT_EQ(bounded->zero_stage, every->zero_stage);
  EXPECT_EQ(bounded->sequence_parallel, every->sequence_parallel);
  EXPECT_EQ(bounded->tp_comm_overlap, every->tp_comm_overlap);
  EXPECT_EQ(bounded->expert_parallel, every->expert_parallel);
  EXPECT_EQ(bounded->token_dispatcher, every->token_dispatcher);
  EXPECT_EQ(bounded->ep_comm_overlap, every->ep_comm_overlap);
  EXPECT_EQ(bounded->context_parallel, every->context_parallel);
  EXPECT_EQ(bounded->context_exchange, every->context_exchange);
  // The bound prunes: a search that costs every layout anyway proves nothing.
  EXPECT_LT(bounded->layouts_evaluated, every->layouts_evaluated / 4);
}

PipelineOptions joint() {
  PipelineOptions o;
  o.joint = true;
  o.budget = 4;
  return o;
}

// A 4-layer decoder with grouped-query attention: tensor, context, pipeline and data parallelism,
// recomputation, ZeRO, sequence parallelism and TP overlap searched on 16 H100s.
TEST(LayoutSearch, DecoderPlanEqualsTheExhaustiveSearchs) {
  const Graph model = zoo::build_llama(32, {4, 256, 4, 2, 512, 128, 1024}, DataType::BFloat16);
  expect_same_plan(model, load_machine("dgx-h100", {0, 16}), joint());
}

// A mixture of experts: expert parallelism, the dispatcher and the all-to-all overlap too.
TEST(LayoutSearch, MixtureOfExpertsPlanEqualsTheExhaustiveSearchs) {
  expect_same_plan(load_model_for_devices("moe-tiny", 16, 32), load_machine("dgx-h100", {0, 16}),
                   joint());
}

// Megatron-Core recomputes the experts' activation (moe_act) only inside its grouped GEMM, which
// runs bf16 and fp8 experts: a launchable fp16 plan searches every layout of the bf16 one but
// those recomputing layernorm,moe_act (one of the MoE recipes' two module sets), and a plan not
// meant for a launcher keeps them.
TEST(LayoutSearch, LaunchableHalfPrecisionExpertsDoNotRecomputeTheirActivation) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  auto layouts = [&](DataType dtype, bool launchable) {
    Graph model = load_model_for_devices("moe-tiny", 8, 16);
    set_compute_dtype(model, dtype);
    PipelineOptions o = joint();
    o.exhaustive = true;
    o.request.launchable = launchable;
    o.request.pipeline_stages = 1;
    o.request.tensor_parallel = 1;
    const auto plan = plan_pipeline(model, machine, o);
    EXPECT_TRUE(plan);
    return plan ? plan->layouts_evaluated : 0;
  };
  const std::int64_t bf16 = layouts(DataType::BFloat16, true);
  const std::int64_t fp16 = layouts(DataType::Float16, true);
  const std::int64_t unrestricted = layouts(DataType::Float16, false);
  EXPECT_GT(bf16, fp16);
  // The recomputations searched are none, the attention's, full and the two module sets: fp16
  // drops one of the five, each as many layouts where no launcher restricts them.
  EXPECT_EQ(unrestricted % 5, 0);
  EXPECT_EQ(bf16 - fp16, unrestricted / 5);
}

// Megatron-Core overlaps the all-to-alls with another micro-batch (--overlap-moe-expert-parallel-
// comm) only without full recomputation, and in a pipeline only with virtual stages
// (TransformerConfig asserts both): a launchable plan is not searched with either, a plan for no
// launcher is, and a launchable request that fixes them is refused naming the flag.
TEST(LayoutSearch, LaunchableAllToAllOverlapRunsAsMegatronCoreTakesIt) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  zoo::TransformerResize four_layers;
  four_layers.layers = 4;
  const Graph model = load_model_for_devices("moe-tiny", 8, 16, four_layers);
  auto options = [](bool launchable, Recompute recompute, int pp, int v,
                    std::optional<bool> overlap = std::nullopt) {
    PipelineOptions o = joint();
    o.exhaustive = true;
    o.request.launchable = launchable;
    o.request.recompute = recompute;
    o.request.pipeline_stages = pp;
    o.request.interleave = v;
    o.request.tensor_parallel = 1;
    o.request.ep_comm_overlap = overlap;
    return o;
  };
  auto layouts = [&](bool launchable, Recompute recompute, int pp, int v,
                     std::optional<bool> overlap = std::nullopt) {
    const auto plan = plan_pipeline(model, machine, options(launchable, recompute, pp, v, overlap));
    EXPECT_TRUE(plan);
    return plan ? plan->layouts_evaluated : 0;
  };
  // Without full recomputation and with virtual stages, the same layouts either way.
  EXPECT_EQ(layouts(true, Recompute::None, 2, 2), layouts(false, Recompute::None, 2, 2));
  // Full recomputation, or a pipeline without virtual stages: every overlapped layout left out.
  for (const auto& [recompute, v] :
       {std::pair{Recompute::Full, 2}, std::pair{Recompute::None, 1}}) {
    const std::int64_t overlapped = layouts(false, recompute, 2, v, true);
    EXPECT_GT(overlapped, 0);
    EXPECT_EQ(layouts(true, recompute, 2, v), layouts(false, recompute, 2, v) - overlapped)
        << to_string(recompute) << " v" << v;
  }
  PipelineOptions fixed = options(true, Recompute::Full, 1, 1);
  fixed.request.ep_comm_overlap = true;
  EXPECT_THROW(plan_pipeline(model, machine, fixed), InputError);
  fixed = options(true, Recompute::None, 2, 1);
  fixed.request.ep_comm_overlap = true;
  EXPECT_THROW(plan_pipeline(model, machine, fixed), InputError);
  fixed.request.launchable = false;
  EXPECT_NO_THROW(plan_pipeline(model, machine, fixed));
  // Without expert parallelism there is nothing to overlap, and Megatron-Core refuses the flag.
  fixed = options(true, Recompute::None, 1, 1);
  fixed.request.ep_comm_overlap = true;
  fixed.request.expert_parallel = 1;
  try {
    plan_pipeline(model, machine, fixed);
    ADD_FAILURE() << "a launchable overlap without expert parallelism was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only with expert parallelism"), std::string::npos)
        << e.what();
  }
}

// torchtitan asserts that its sequence splits over TP x 2 x CP (ParallelDims.seq_len_divisor), and
// Megatron-LM that sequence parallelism's share divides by TP (mappings.py): llama-tiny with 4 key/
// value heads searches TP 1, 2 and 4; at 36 tokens torchtitan runs no TP 4 (36 % 8 != 0) and
// Megatron-LM runs TP 4 (36 % 4 == 0), at 38 tokens neither splits it over 4 devices.
TEST(LayoutSearch, LaunchersSearchOnlyTheSequenceSplitsTheyRun) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  auto model = [](std::int64_t seq) {
    zoo::TransformerResize resize;
    resize.kv_heads = 4;
    resize.seq = seq;
    return load_model_for_devices("llama-tiny", 8, 16, resize);
  };
  auto options = [](std::optional<launch::Framework> launcher, int tp) {
    PipelineOptions o = joint();
    o.exhaustive = true;
    o.request.pipeline_stages = 1;
    o.request.context_parallel = 1;
    if (tp) o.request.tensor_parallel = tp;
    if (launcher) launch::limit_to_launcher(o.request, *launcher);
    return o;
  };
  auto layouts = [&](std::int64_t seq, std::optional<launch::Framework> launcher, int tp = 0) {
    const auto plan = plan_pipeline(model(seq), machine, options(launcher, tp));
    EXPECT_TRUE(plan);
    return plan ? plan->layouts_evaluated : 0;
  };
  const auto torchtitan = launch::Framework::Torchtitan;
  const auto megatron = launch::Framework::Megatron;
  // torchtitan: 36 and 40 tokens differ only in TP 4's layouts.
  EXPECT_EQ(layouts(36, torchtitan), layouts(40, torchtitan) - layouts(40, torchtitan, 4));
  EXPECT_GT(layouts(40, torchtitan, 4), 0);
  try {
    plan_pipeline(model(36), machine, options(torchtitan, 4));
    ADD_FAILURE() << "torchtitan's TP 4 on 36 tokens was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("TP x 2 x CP = 8"), std::string::npos) << e.what();
  }
  // Megatron-LM: TP 4 on 38 tokens without sequence parallelism (and so without TP overlap),
  // which 36 tokens keep; a plan for no launcher keeps it too.
  EXPECT_LT(layouts(38, megatron, 4), layouts(36, megatron, 4));
  EXPECT_EQ(layouts(38, std::nullopt, 4), layouts(36, std::nullopt, 4));
  PipelineOptions fixed = options(megatron, 4);
  fixed.request.sequence_parallel = true;
  EXPECT_THROW(plan_pipeline(model(38), machine, fixed), InputError);
  // A context-parallel degree the devices do not hold is no sequence split torchtitan refused:
  // for no launcher there is simply no layout (the caller says so), not torchtitan's divisor.
  PipelineOptions wide = options(std::nullopt, 0);
  wide.request.context_parallel = 16;
  EXPECT_FALSE(plan_pipeline(model(64), machine, wide));
}

// Transformer Engine's context parallelism takes multi-head latent attention only by a ring
// (context_parallel.py refuses MLA with cp_comm_type all_gather): a launchable deepseek-tiny at CP
// 2 searches the ring alone, half the exchanges a plan for no launcher weighs, while
// llama-tiny keeps both; asked for, the all-gather is refused naming it.
TEST(LayoutSearch, LaunchableLatentAttentionRingsItsKeysAndValues) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  auto options = [](bool launchable) {
    PipelineOptions o = joint();
    o.exhaustive = true;
    o.request.launchable = launchable;
    o.request.context_parallel = 2;
    o.request.tensor_parallel = 1;
    o.request.pipeline_stages = 1;
    o.request.recompute = Recompute::None;
    return o;
  };
  auto layouts = [&](const char* name, bool launchable) {
    const auto plan =
        plan_pipeline(load_model_for_devices(name, 8, 16), machine, options(launchable));
    EXPECT_TRUE(plan);
    if (plan && launchable && std::string(name) == "deepseek-tiny") {
      EXPECT_EQ(plan->context_exchange, ContextExchange::Ring);
    }
    return plan ? plan->layouts_evaluated : 0;
  };
  EXPECT_EQ(layouts("deepseek-tiny", true) * 2, layouts("deepseek-tiny", false));
  EXPECT_EQ(layouts("llama-tiny", true), layouts("llama-tiny", false));
  PipelineOptions gathered = options(true);
  gathered.request.context_exchange = ContextExchange::AllGather;
  EXPECT_THROW(plan_pipeline(load_model_for_devices("deepseek-tiny", 8, 16), machine, gathered),
               InputError);
}

// Memory binds: a 7.5B GPT on 8 A100s of 80 GB fits only with its weights and optimizer state
// split, so the fastest layouts by compute do not fit and the bound's memory side must prune.
TEST(LayoutSearch, ModelThatMustBeSplitToFitPlanEqualsTheExhaustiveSearchs) {
  PipelineOptions o = joint();
  o.request.sequence_parallel = false;
  o.request.tp_comm_overlap = false;
  expect_same_plan(load_model_for_devices("gpt-7.5b", 8, 64), load_machine("dgx-a100", {0, 8}), o);
}

// Searched tensor parallelism splits every attention's heads and key/value groups evenly, as
// Megatron-Core requires: on a GB200 NVL72 rack (72 GPUs a node, so tensor-parallel degrees up to
// 72) a decoder with 4 heads in 2 groups searches exactly the layouts of TP 1 and TP 2.
TEST(LayoutSearch, SearchedTensorParallelismDividesTheHeadGroups) {
  const Graph model = zoo::build_llama(72, {2, 64, 4, 2, 128, 32, 256}, DataType::BFloat16);
  const MachineSpec rack = load_machine("gb200-nvl72", {0, 72});
  PipelineOptions o = joint();
  o.exhaustive = true;
  const auto searched = plan_pipeline(model, rack, o);
  ASSERT_TRUE(searched);
  EXPECT_TRUE(searched->tensor_parallel == 1 || searched->tensor_parallel == 2)
      << searched->tensor_parallel;
  std::int64_t fixed = 0;
  for (int tp : {1, 2}) {
    PipelineOptions f = o;
    f.request.tensor_parallel = tp;
    const auto plan = plan_pipeline(model, rack, f);
    ASSERT_TRUE(plan);
    fixed += plan->layouts_evaluated;
  }
  EXPECT_EQ(searched->layouts_evaluated, fixed);
}

}  // namespace
}  // namespace unity
