// Large-model plans: the 1F1B schedule's bubble, memory by kind with recomputation and ZeRO, the
// segment chain a transformer is cut into, and plans that are made to fit.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

TEST(PipelineTime, OneForwardOneBackwardBubbleByHand) {
  // Four balanced stages of 2 s a micro-batch, 8 micro-batches: (m + p - 1) T = 22 s, of which
  // 6 s wait: (p - 1) / m = 3/8 of the ideal 16 s.
  const PipelineTime balanced = pipeline_time({2, 2, 2, 2}, 8);
  EXPECT_DOUBLE_EQ(balanced.time, 22.0);
  EXPECT_DOUBLE_EQ(balanced.bubble, 6.0);
  EXPECT_DOUBLE_EQ(balanced.bubble_fraction, 3.0 / 8.0);
  // Unequal stages: the first micro-batch passes all of them (3 + 4 + 2), the other three wait for
  // the slowest (4 each): 9 + 12 = 21 s against the ideal 4 x 4.
  const PipelineTime unequal = pipeline_time({3, 4, 2}, 4);
  EXPECT_DOUBLE_EQ(unequal.time, 21.0);
  EXPECT_DOUBLE_EQ(unequal.bubble_fraction, 5.0 / 16.0);
  // Two chunks per device shrink the bubble to (p - 1) / (v m): 8 x 2 + 3 x 2 / 2 = 19 s.
  const PipelineTime interleaved = pipeline_time({2, 2, 2, 2}, 8, 2);
  EXPECT_DOUBLE_EQ(interleaved.time, 19.0);
  EXPECT_DOUBLE_EQ(interleaved.bubble_fraction, 3.0 / 16.0);
  // One stage: gradient accumulation, no bubble.
  EXPECT_DOUBLE_EQ(pipeline_time({5}, 4).bubble, 0.0);
}

TEST(PipelineTime, MicroBatchesInFlightPerRank) {
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(0, 4, 8), 4.0);  // the first stage holds p
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(3, 4, 8), 1.0);  // the last one
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(0, 4, 2), 2.0);  // never more than m
  // Interleaved, rank 0 of 4 with 2 chunks: (4 - 1) x 2 + (2 - 1) x 4 + 1 = 11 chunk steps.
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(0, 4, 8, 2), 5.5);
}

TEST(PipelineMemory, BytesPerParameterWithZero) {
  const double p = 1e9;
  // Mixed-precision Adam: fp16 weights 2 + gradients 2 + fp32 master, momentum, variance 12.
  const MemoryBreakdown none = parameter_memory(p, DataType::Float16, Optimizer::Adam, 0, 8);
  EXPECT_DOUBLE_EQ(none.weights, 2e9);
  EXPECT_DOUBLE_EQ(none.gradients, 2e9);
  EXPECT_DOUBLE_EQ(none.optimizer, 12e9);
  EXPECT_DOUBLE_EQ(none.total(), 16e9);
  const MemoryBreakdown z1 = parameter_memory(p, DataType::Float16, Optimizer::Adam, 1, 8);
  EXPECT_DOUBLE_EQ(z1.total(), 2e9 + 2e9 + 1.5e9);
  const MemoryBreakdown z2 = parameter_memory(p, DataType::Float16, Optimizer::Adam, 2, 8);
  EXPECT_DOUBLE_EQ(z2.total(), 2e9 + 0.25e9 + 1.5e9);
  const MemoryBreakdown z3 = parameter_memory(p, DataType::Float16, Optimizer::Adam, 3, 8);
  EXPECT_DOUBLE_EQ(z3.total(), 2e9);  // 16 bytes over 8 copies
  // fp32 Adam keeps no master copy: 4 + 4 + 8.
  EXPECT_DOUBLE_EQ(parameter_memory(p, DataType::Float32, Optimizer::Adam, 0, 1).total(), 16e9);
  // bf16 keeps fp32 gradients (gradient_bytes): 2 + 4 + 4 (master).
  EXPECT_DOUBLE_EQ(parameter_memory(p, DataType::BFloat16, Optimizer::SGD, 0, 1).total(), 10e9);
}

TEST(SegmentChain, GptTinyIsCutAfterEveryResidualAdd) {
  const Graph g = zoo::build("gpt-tiny");
  const SegmentChain chain = segment_chain(g);
  // [embed.token] [embed.position, embed.add], per layer [attention half] [MLP half], then the
  // final norm and the head with its loss (one activation between each; a loss stays with what
  // it reads).
  ASSERT_EQ(chain.segments.size(), 8u);
  EXPECT_EQ(chain.layers, 2);
  const auto first_name = [&](int i) { return g.node(chain.segments[i].nodes.front()).op.name; };
  EXPECT_EQ(first_name(2), "layers.0.attention_norm");
  EXPECT_EQ(first_name(3), "layers.0.mlp_norm");
  EXPECT_EQ(first_name(6), "final_norm");
  // Both layers' halves are planned once.
  EXPECT_EQ(chain.segments[2].kind, chain.segments[4].kind);
  EXPECT_EQ(chain.segments[3].kind, chain.segments[5].kind);
  EXPECT_NE(chain.segments[2].kind, chain.segments[3].kind);
  EXPECT_EQ(chain.kinds(), 6);
  // A segment as a graph of its own, at another batch.
  const Graph mlp = segment_graph(g, chain.segments[3], 3);
  EXPECT_EQ(mlp.count(OpType::Linear), 2);
  EXPECT_NO_THROW(mlp.validate());
  for (const auto& [id, n] : mlp.nodes()) {
    if (n.op.type == OpType::Input) {
      EXPECT_EQ(n.outputs[0].dims[0].size, 3);
    }
  }
}

namespace {

Plan expert(const std::string& model, std::int64_t batch, const std::string& machine, int gpus,
            LayoutRequest layout) {
  const MachineSpec m = load_machine(machine, {0, gpus});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout = layout;
  return optimize_plan(load_model_for_devices(model, m.num_devices(), batch), m, o);
}

}  // namespace

// gpt-tiny (hidden 64, 4 heads, ffn 256, sequence 32, vocabulary 256, fp16) on one GPU, 4
// micro-batches of one sample: every byte counted by hand.
TEST(PipelineMemory, GptTinyActivationsWithAndWithoutRecomputation) {
  LayoutRequest r;
  r.tensor_parallel = 1;
  r.pipeline_stages = 1;
  r.micro_batches = 4;
  r.recompute = Recompute::None;
  const Plan keep = expert("gpt-tiny", 4, "dgx-a100", 1, r);
  ASSERT_TRUE(keep.pipeline);
  const double act = 32 * 64 * 2;    // one [1, 32, 64] fp16 activation
  const double wide = 32 * 256 * 2;  // one [1, 32, 256] fp16 activation (fc1, gelu, logits)
  const double probabilities = 4 * 32 * 32 * 2;  // [1, 4 heads, 32, 32]
  // What a backward pass reads is kept, a sum's inputs are not. Attention half: the norm's input,
  // the attention's input, its q k v and context (4), its probabilities. MLP half: the norm's
  // input, fc1's input, gelu's input, fc2's input. The embeddings keep nothing (lookups and a
  // sum); the head keeps the final norm's input and the head's input, the loss its fp32 softmax
  // of the fp16 logits (twice their bytes).
  const double attention = 2 * act + 4 * act + probabilities;
  const double mlp = 2 * act + 2 * wide;
  const double embeddings = 0;
  const double head = 2 * act + 2 * wide;
  ASSERT_EQ(keep.pipeline->rank_memory.size(), 1u);
  EXPECT_DOUBLE_EQ(keep.pipeline->rank_memory[0].activations,
                   2 * (attention + mlp) + embeddings + head);
  EXPECT_DOUBLE_EQ(keep.pipeline->rank_memory[0].workspace, 0.0);
  // Weights by hand: 134,400 parameters; fp16 weights and gradients, Adam's 12 bytes.
  EXPECT_DOUBLE_EQ(keep.pipeline->rank_memory[0].weights, 134400.0 * 2);
  EXPECT_DOUBLE_EQ(keep.pipeline->rank_memory[0].optimizer, 134400.0 * 12);

  r.recompute = Recompute::Full;
  const Plan full = expert("gpt-tiny", 4, "dgx-a100", 1, r);
  // The four blocks keep their input only; the embedding and the head are not recomputed; one
  // block's activations are rebuilt at a time.
  EXPECT_DOUBLE_EQ(full.pipeline->rank_memory[0].activations, 4 * act + embeddings + head);
  EXPECT_DOUBLE_EQ(full.pipeline->rank_memory[0].workspace, mlp);
  EXPECT_GT(full.summary.iteration_time_ms, keep.summary.iteration_time_ms);
  // Megatron-LM's count: a recomputed block's forward once more.
  EXPECT_GT(full.summary.model_flops_per_iteration, keep.summary.model_flops_per_iteration);

  r.recompute = Recompute::Selective;
  const Plan selective = expert("gpt-tiny", 4, "dgx-a100", 1, r);
  EXPECT_DOUBLE_EQ(selective.pipeline->rank_memory[0].activations,
                   2 * (attention - probabilities + mlp) + embeddings + head);
}

TEST(PipelinePlan, StagesHoldMegatronsEqualLayerCounts) {
  LayoutRequest r;
  r.tensor_parallel = 8;
  r.pipeline_stages = 4;
  const Plan plan = expert("gpt-76b", 1792, "selene", 1024, r);
  ASSERT_TRUE(plan.pipeline);
  const auto& p = *plan.pipeline;
  EXPECT_EQ(p.data_parallel, 32);
  EXPECT_EQ(plan.summary.pipeline_stages, 4);
  EXPECT_EQ(p.recompute, Recompute::Full);  // the published runs' setting
  ASSERT_EQ(static_cast<int>(p.chunks.size()), 4 * p.interleave);
  const int per_chunk = 60 / (4 * p.interleave);
  for (std::size_t c = 0; c < p.chunks.size(); ++c) {
    EXPECT_EQ(p.chunks[c].first_layer, static_cast<int>(c) * per_chunk);
    EXPECT_EQ(p.chunks[c].last_layer, static_cast<int>(c + 1) * per_chunk - 1);
  }
  EXPECT_EQ(p.chunks.front().first_node, "embed.token");
  EXPECT_EQ(p.chunks.back().last_node, "loss");
  // The first rank holds the most micro-batches in flight (the last one also keeps the loss's
  // fp32 softmax over the gathered vocabulary, so compare ranks of blocks alone).
  EXPECT_GT(p.rank_memory[0].activations, p.rank_memory[1].activations);
  EXPECT_GT(p.rank_memory[1].activations, p.rank_memory[2].activations);
  EXPECT_TRUE(plan.summary.fits_in_memory);
  EXPECT_NEAR(p.bubble_fraction, 3.0 / (p.micro_batches * p.interleave), 0.02);
}

// Layers that do not divide the chunks: one fewer in the chunks at the ends, first and last
// alternately, inwards (Megatron-Core's --decoder-first/last-pipeline-num-layers), so 10 layers on
// 4 stages are 2, 3, 3, 2 and 9 layers on 4 stages 2, 2, 3, 2.
TEST(PipelinePlan, LayersThatDoNotDivideTheStagesAreFewerAtTheEnds) {
  for (const auto& [layers, counts] :
       {std::pair{10, std::vector<int>{2, 3, 3, 2}}, std::pair{9, std::vector<int>{2, 2, 3, 2}}}) {
    LayoutRequest r;
    r.tensor_parallel = 1;
    r.pipeline_stages = 4;
    r.interleave = 1;
    const Graph model = load_model_for_devices("gpt-tiny", 8, 16, {.layers = layers});
    OptimizeOptions o;
    o.mode = "expert";
    o.layout = r;
    const Plan plan = optimize_plan(model, load_machine("dgx-a100", {0, 8}), o);
    ASSERT_TRUE(plan.pipeline);
    std::vector<int> held;
    for (const auto& c : plan.pipeline->chunks) held.push_back(c.last_layer - c.first_layer + 1);
    EXPECT_EQ(held, counts) << layers << " layers";
    EXPECT_EQ(plan.pipeline->chunks.back().last_node, "loss");
  }
  // More chunks than layers cannot be cut.
  LayoutRequest r;
  r.tensor_parallel = 1;
  r.pipeline_stages = 4;
  r.interleave = 2;
  OptimizeOptions o;
  o.mode = "expert";
  o.layout = r;
  EXPECT_THROW(optimize_plan(load_model_for_devices("gpt-tiny", 8, 16, {.layers = 6}),
                             load_machine("dgx-a100", {0, 8}), o),
               InputError);
}

TEST(PipelinePlan, RequestsThatCannotBeMetAreInputErrors) {
  LayoutRequest r;
  r.tensor_parallel = 3;
  EXPECT_THROW(expert("gpt-tiny", 8, "dgx-a100", 8, r), InputError);
  r.tensor_parallel = 1;
  r.pipeline_stages = 20;  // gpt-tiny has 9 segments
  EXPECT_THROW(expert("gpt-tiny", 8, "dgx-a100", 8, r), InputError);
  r.pipeline_stages = 1;
  r.interleave = 2;  // interleaving needs stages
  EXPECT_THROW(expert("gpt-tiny", 8, "dgx-a100", 8, r), InputError);
  r.pipeline_stages = 2;
  r.micro_batches = 3;  // 2 stages do not divide 3 micro-batches
  EXPECT_THROW(expert("gpt-1.7b", 24, "dgx-a100", 8, r), InputError);
}

// Interleaving asked for without a micro-batch count: the planner takes a count the stages divide
// (8 samples a copy on 2 stages: 8, 4 or 2 micro-batches), where one of them (1) would not do.
// Each copy with a single sample has no such count, and is refused naming it.
TEST(PipelinePlan, InterleavingPicksAMicroBatchCountTheStagesDivide) {
  LayoutRequest r;
  r.tensor_parallel = 1;
  r.pipeline_stages = 2;
  r.interleave = 2;
  const Plan plan = expert("gpt-1.7b", 32, "dgx-a100", 8, r);  // 4 copies of 8 samples
  ASSERT_TRUE(plan.pipeline);
  EXPECT_EQ(plan.pipeline->interleave, 2);
  EXPECT_EQ(plan.pipeline->micro_batches % 2, 0);
  try {
    expert("gpt-1.7b", 4, "dgx-a100", 8, r);  // 4 copies of 1 sample
    ADD_FAILURE() << "one sample a copy cannot be interleaved";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("each data-parallel copy has 1 sample to split"),
              std::string::npos)
        << e.what();
  }
}

// ZeRO 2 and 3 combine with pipelines when asked for (the search alone keeps to 0 and 1): each
// micro-batch then reduce-scatters its gradients and ZeRO 3 gathers the weights for every pass,
// so the data-parallel traffic grows with the micro-batches while the weights' memory shrinks.
TEST(PipelinePlan, ZeroThreeWithPipelinesWhenAskedFor) {
  LayoutRequest r;
  r.tensor_parallel = 1;
  r.pipeline_stages = 2;
  r.micro_batches = 4;
  r.zero_stage = 0;
  const Plan zero0 = expert("gpt-tiny", 32, "dgx-a100", 8, r);
  r.zero_stage = 3;
  const Plan zero3 = expert("gpt-tiny", 32, "dgx-a100", 8, r);
  ASSERT_TRUE(zero3.pipeline);
  EXPECT_EQ(zero3.pipeline->zero_stage, 3);
  EXPECT_GT(zero3.pipeline->sync_time, zero0.pipeline->sync_time);
  EXPECT_LT(zero3.pipeline->rank_memory[0].weights, zero0.pipeline->rank_memory[0].weights);
}

// A model that does not fit with data parallelism comes back fitting.
TEST(PipelinePlan, ModelTooLargeForDataParallelismIsMadeToFit) {
  const MachineSpec m = load_machine("dgx-a100", {0, 8});
  const Graph model = load_model_for_devices("gpt-7.5b", 8, 64);
  OptimizeOptions dp;
  dp.mode = "data-parallel";
  const Plan replicated = optimize_plan(model, m, dp);
  EXPECT_FALSE(replicated.summary.fits_in_memory);  // 7.7 G parameters x 16 bytes
  OptimizeOptions joint;
  joint.mode = "joint";
  joint.budget = 8;
  const Plan plan = optimize_plan(model, m, joint);
  EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.origin;
  EXPECT_LE(plan.summary.peak_memory_bytes, 80.0 * (1 << 30));
  ASSERT_TRUE(plan.pipeline);
  EXPECT_GT(
      plan.pipeline->tensor_parallel * plan.pipeline->pipeline_stages + plan.pipeline->zero_stage,
      1);
}

// Sequence parallelism splits what tensor parallelism leaves whole (the norms and the residual
// sums) along the sequence: less memory and less work on each device, the same collectives' volume.
TEST(PipelinePlan, SequenceParallelismSplitsTheNormsWorkAndMemory) {
  LayoutRequest r;
  r.tensor_parallel = 4;
  r.pipeline_stages = 1;
  r.micro_batches = 1;
  r.recompute = Recompute::None;
  r.sequence_parallel = false;
  const Plan plain = expert("gpt-1.7b", 4, "selene", 4, r);
  r.sequence_parallel = true;
  const Plan split = expert("gpt-1.7b", 4, "selene", 4, r);
  ASSERT_TRUE(plain.pipeline && split.pipeline);
  EXPECT_FALSE(plain.pipeline->sequence_parallel);
  EXPECT_TRUE(split.pipeline->sequence_parallel);
  EXPECT_LT(split.pipeline->rank_memory[0].activations, plain.pipeline->rank_memory[0].activations);
  EXPECT_LT(split.summary.iteration_time_ms, plain.summary.iteration_time_ms);
  EXPECT_DOUBLE_EQ(split.pipeline->rank_memory[0].weights, plain.pipeline->rank_memory[0].weights);
}
