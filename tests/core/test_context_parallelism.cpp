// Context parallelism in the pipeline planner: the key/value exchange of the ring and the
// all-gather computed by hand on two DGX H100 nodes, the planner's K/V traffic and memory for a
// small decoder by hand, the weights synchronised over the sequence shards, and the joint search
// choosing CP for a 128K-token Llama 3 70B that fits no other way.
#include <gtest/gtest.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/context_exchange.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

// Two devices on two DGX H100 nodes (50 GB/s, 3 us apart) sharing 100 MB of keys and values.
TEST(ContextParallelism, ExchangeByHand) {
  const CostModel costs(load_machine("dgx-h100", {0, 16}));
  const std::vector<std::vector<int>> pair{{0, 8}};
  const double kv = 1e8;
  // All-gather: each device receives the other's half, 50 MB: 1 ms + 3 us, in each pass (the
  // backward's reduce-scatter of the gradients the same); 100 MB sent each way; the gathered
  // keys and values and their gradients held.
  const auto gather =
      context_exchange_cost(ContextExchange::AllGather, pair, kv, 1e-3, 2e-3, costs);
  EXPECT_NEAR(gather.forward, 1.003e-3, 1e-12);
  EXPECT_NEAR(gather.backward, 1.003e-3, 1e-12);
  EXPECT_DOUBLE_EQ(gather.bytes, 2e8);
  EXPECT_DOUBLE_EQ(gather.workspace, 2e8);
  // Ring: one step, the 50 MB block sent (1.003 ms) while half of the products run (0.5 ms of
  // 1 ms): 0.503 ms exposed; backward the block and its gradient (2.003 ms) behind 1 ms of the
  // 2 ms.
  const auto ring = context_exchange_cost(ContextExchange::Ring, pair, kv, 1e-3, 2e-3, costs);
  EXPECT_NEAR(ring.forward, 0.503e-3, 1e-12);
  EXPECT_NEAR(ring.backward, 1.003e-3, 1e-12);
  EXPECT_DOUBLE_EQ(ring.bytes, 3e8);
  EXPECT_DOUBLE_EQ(ring.workspace, 2e8);
  // Products long enough hide the ring entirely.
  const auto hidden = context_exchange_cost(ContextExchange::Ring, pair, kv, 10e-3, 20e-3, costs);
  EXPECT_DOUBLE_EQ(hidden.forward, 0);
  EXPECT_DOUBLE_EQ(hidden.backward, 0);
  // A single device exchanges nothing.
  EXPECT_DOUBLE_EQ(context_exchange_cost(ContextExchange::Ring, {{3}}, kv, 1e-3, 2e-3, costs).bytes,
                   0);
  EXPECT_EQ(context_exchange_from_string("all_gather"), ContextExchange::AllGather);
  EXPECT_EQ(to_string(ContextExchange::Ring), "p2p");
  EXPECT_THROW(context_exchange_from_string("ring"), InputError);
}

// A 4-layer decoder, hidden 256, 4 heads of 64 with 2 key/value heads, batch 32 of 128 tokens.
Graph small_decoder() {
  zoo::TransformerSizes z{4, 256, 4, 2, 512, 128, 1024};
  return zoo::build_llama(32, z, DataType::BFloat16);
}

PipelineOptions fixed(int cp, ContextExchange x) {
  PipelineOptions o;
  o.request.tensor_parallel = 2;
  o.request.pipeline_stages = 2;
  o.request.micro_batches = 8;
  o.request.interleave = 1;
  o.request.recompute = Recompute::None;
  o.request.zero_stage = 1;
  o.request.sequence_parallel = false;
  o.request.context_parallel = cp;
  o.request.context_exchange = x;
  o.request.device_order = DeviceOrder::PipelineOutermost;
  return o;
}

TEST(ContextParallelism, KeyValueTrafficAndMemoryByHand) {
  const Graph model = small_decoder();
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  // 16 devices: tp 2 x cp 2 x pp 2 x dp 2; 16 samples a copy in 8 micro-batches of 2.
  const auto ring = plan_pipeline(model, machine, fixed(2, ContextExchange::Ring));
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->context_parallel, 2);
  EXPECT_EQ(ring->data_parallel, 2);
  EXPECT_EQ(ring->micro_batch_size, 2);
  // An attention's keys and values for one device's heads (one of 2 key/value heads, 64 wide)
  // over the whole sequence: 2 (k, v) x 2 samples x 128 tokens x 64 x 2 bytes = 65,536. The ring
  // sends each device's half once forward and with its gradient backward (3 x 32,768 bytes),
  // on each of the 2 tensor-parallel rings, per layer (4), micro-batch (8) and copy (2).
  const double kv = 2.0 * 2 * 128 * 64 * 2;
  EXPECT_DOUBLE_EQ(ring->cp_bytes, 3 * (kv / 2) * 2 * 2 * 4 * 8 * 2);
  const auto gather = plan_pipeline(model, machine, fixed(2, ContextExchange::AllGather));
  ASSERT_TRUE(gather);
  // The all-gather: the half each device lacks, then the gradients' reduce-scatter.
  EXPECT_DOUBLE_EQ(gather->cp_bytes, 2 * (kv / 2) * 2 * 2 * 4 * 8 * 2);
  // Its exposed time: each attention's gather and reduce-scatter inside a node (devices 0 and 2,
  // NVLink 4: 450 GB/s, 2 us): 32,768 bytes / 450 GB/s + 2 us a pass, 2 layers a rank, 8
  // micro-batches.
  EXPECT_NEAR(gather->cp_time, 8 * 2 * 2 * (32768 / 450e9 + 2e-6), 1e-12);

  // Against the same 16 devices without context parallelism (tp 2 x pp 2 x dp 4, micro-batches
  // of 2 in 4 per copy): each device keeps half the tokens' activations; its weights and their
  // ZeRO-1 shards are the same (synchronised over dp x cp = 4 devices either way).
  PipelineOptions none = fixed(1, ContextExchange::Ring);
  none.request.micro_batches = 4;
  const auto whole = plan_pipeline(model, machine, none);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->data_parallel, 4);
  EXPECT_EQ(whole->micro_batch_size, 2);
  EXPECT_DOUBLE_EQ(whole->cp_bytes, 0);
  ASSERT_EQ(whole->rank_memory.size(), ring->rank_memory.size());
  for (std::size_t r = 0; r < whole->rank_memory.size(); ++r) {
    EXPECT_DOUBLE_EQ(ring->rank_memory[r].weights, whole->rank_memory[r].weights);
    EXPECT_DOUBLE_EQ(ring->rank_memory[r].optimizer, whole->rank_memory[r].optimizer);
    // In flight: 2 micro-batches on rank 0, 1 on rank 1, in both layouts.
    EXPECT_NEAR(ring->rank_memory[r].activations / whole->rank_memory[r].activations, 0.5, 1e-12);
  }
  // Megatron-LM's FLOP count is the model's, whatever the split.
  EXPECT_DOUBLE_EQ(ring->model_flops, whole->model_flops);
  // The grid: tp ranks innermost, the sequence shards next.
  EXPECT_EQ(ring->grid().device(0, 0, 2), 2);
  EXPECT_EQ(ring->grid().device(0, 1, 0), 4);
  EXPECT_EQ(ring->grid().device(1, 0, 0), 8);
}

TEST(ContextParallelism, RefusesWhatCannotSplit) {
  const Graph model = small_decoder();
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  // 128 tokens do not split into 2 x 128 chunks.
  PipelineOptions o = fixed(128, ContextExchange::Ring);
  o.request.tensor_parallel = 1;
  o.request.pipeline_stages = 1;
  o.request.micro_batches = 0;
  EXPECT_THROW(plan_pipeline(model, machine, o), InputError);
  // 16 devices are not replicas of tp 2 x cp 3 (and 128 tokens not 6 chunks).
  EXPECT_THROW(plan_pipeline(model, machine, fixed(3, ContextExchange::Ring)), InputError);
}

// Searched, a context-parallel degree that the fixed knobs leave no room for is skipped, not an
// error: tp 1 and pp 2 fixed on 4 devices leave cp 1 or 2, never 4.
TEST(ContextParallelism, SearchedDegreesFitWhatWasFixed) {
  PipelineOptions o;
  o.joint = true;
  o.budget = 4;
  o.request.tensor_parallel = 1;
  o.request.pipeline_stages = 2;
  o.request.micro_batches = 4;
  const auto plan = plan_pipeline(small_decoder(), load_machine("dgx-h100", {0, 4}), o);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->pipeline_stages, 2);
  EXPECT_LE(plan->context_parallel, 2);
}

// Llama 3 70B at 131,072 tokens on 4 DGX H100 nodes: no layout without context parallelism fits
// (a micro-batch of one sequence keeps too much), so the joint search must split the sequence.
TEST(ContextParallelism, JointSearchSplitsALongSequence) {
  zoo::TransformerResize resize;
  resize.seq = 131072;
  const Graph model = load_model_for_devices("llama3-70b", 32, 16, resize);
  const MachineSpec machine = load_machine("dgx-h100", {0, 32});
  OptimizeOptions o;
  o.mode = "joint";
  const Plan plan = optimize_plan(model, machine, o);
  ASSERT_TRUE(plan.pipeline);
  EXPECT_GT(plan.pipeline->context_parallel, 1) << plan.summary.origin;
  EXPECT_EQ(plan.summary.cp, plan.pipeline->context_parallel);
  EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.peak_memory_bytes / double(1 << 30);
  OptimizeOptions without = o;
  without.layout.context_parallel = 1;
  const Plan flat = optimize_plan(model, machine, without);
  EXPECT_FALSE(flat.summary.fits_in_memory);
}

}  // namespace
}  // namespace unity
