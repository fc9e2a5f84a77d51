// Pipelined plans on the executor: chunks compute what the model computes, and a pipelined run
// (1F1B, interleaved, recomputation, ZeRO, data-parallel copies) trains equal to one rank.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "executor_test_support.h"
#include "pipeline_test_support.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/transformer_models.h"
#include "unity/executor/pipeline_training.h"

namespace unity::executor {
namespace {

using testing::expect_matches;
using testing::relative_difference;

// gpt-tiny (fp16; the executor runs it in fp32) planned in Megatron-LM's layout.
Plan pipelined_plan(int devices, LayoutRequest layout, const zoo::TransformerResize& resize = {}) {
  const Graph model = load_model_for_devices("gpt-tiny", devices, 0, resize);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout = layout;
  Plan plan = optimize_plan(model, load_machine("cpu-local", {0, devices}), o);
  EXPECT_TRUE(plan.pipeline.has_value());
  return plan;
}

LayoutRequest layout(int pp, int m, Recompute recompute = Recompute::Full, int zero = 0,
                     int interleave = 1) {
  LayoutRequest r;
  r.tensor_parallel = 1;
  r.pipeline_stages = pp;
  r.micro_batches = m;
  r.recompute = recompute;
  r.zero_stage = zero;
  r.interleave = interleave;
  return r;
}

// Adam divides each gradient by its own running size, so a weight whose gradient is nearly zero
// (sums that cancel) moves by up to the learning rate whatever its rounding: the order of the
// micro-batches' sums then shows in the largest relative difference of a small weight. On an AMD
// EPYC (OpenBLAS, any core type) an MLP weight differs by 2.5e-4 to 4.5e-4 of its largest element
// (within 1e-4 on the machine these tests were written on), under 1e-4 in absolute terms; with SGD
// the same plans agree to 1e-6 (ZeroShardsTheOptimizerAndTrainsTheSame).
constexpr double kAdamTolerance = 1e-3;

TrainingOptions options(const std::string& optimizer, int iterations = 4) {
  TrainingOptions o;
  o.iterations = iterations;
  o.optimizer = optimizer;
  o.collect_weights = true;
  return o;
}

using testing::train_one_rank;
using testing::train_pipeline_on_threads;

double max_relative(const TrainingResult& run, const TrainingResult& ref) {
  double worst = 0;
  for (const auto& [name, w] : ref.weights)
    worst = std::max(worst, relative_difference(run.weights.at(name).values, w.values));
  return worst;
}

TEST(PipelineChunks, ChunkLossesEqualTheModelsRowByRow) {
  Graph model = zoo::build("gpt-tiny", 4);
  set_compute_dtype(model, DataType::Float32);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  std::map<std::string, HostTensor> data;
  std::map<NodeId, HostTensor> inputs;
  for (const auto& [id, n] : model.nodes()) {
    if (n.op.type != OpType::Input) continue;
    HostTensor h;
    h.shape = n.outputs.at(0).sizes();
    h.integer = true;
    const std::int64_t range = n.op.name == "position_ids" ? 32 : 256;
    for (std::int64_t i = 0; i < 4 * 32; ++i) h.integers.push_back((i * 7919 + id * 31) % range);
    data[n.op.name] = h;
    inputs[id] = h;
  }
  const Program whole = lower_plan(model, single_device_views(model), 1);
  const HostTensor loss = evaluate(whole, inputs, *backend, *comm).begin()->second;  // [4, 32]
  const SegmentChain chain = segment_chain(model);
  const int last = static_cast<int>(chain.segments.size()) - 1;
  // The whole chain as one chunk of 2 samples, fed rows `first` and `first` + 1.
  const ChunkGraph chunk = chunk_graph(model, chain, 0, last, 2);
  EXPECT_EQ(chunk.input, -1);  // the first chunk reads the model's inputs
  const Program program = lower_plan(chunk.graph, single_device_views(chunk.graph), 1);
  for (int first : {0, 1, 2}) {
    std::map<NodeId, HostTensor> given;
    for (const auto& [id, n] : chunk.graph.nodes()) {
      if (n.op.type != OpType::Input) continue;
      const HostTensor& h = data.at(n.op.name);
      HostTensor rows;
      rows.shape = {2, 32};
      rows.integer = true;
      rows.integers.assign(h.integers.begin() + first * 32, h.integers.begin() + first * 32 + 64);
      given[id] = rows;
    }
    const HostTensor part = evaluate(program, given, *backend, *comm).begin()->second;
    for (int i = 0; i < 64; ++i)
      ASSERT_NEAR(part.values[i], loss.values[first * 32 + i], 1e-5) << "row " << first;
  }
  // A middle chunk reads the activation before it and hands one on.
  const ChunkGraph middle = chunk_graph(model, chain, 2, 3, 2);
  EXPECT_GE(middle.input, 0);
  EXPECT_GE(middle.output.node, 0);
}

TEST(PipelineTraining, OneFOneBOverTwoStagesAndTwoCopiesEqualsOneRank) {
  // The run: 2 stages x 2 copies, 4 micro-batches, Megatron-LM's full recomputation, the
  // plan's Adam.
  const Plan plan = pipelined_plan(4, layout(2, 4));
  EXPECT_EQ(plan.pipeline->data_parallel, 2);
  const auto o = options("adam");
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  const TrainingResult ref = train_one_rank(plan, o);
  expect_matches(run, ref, kAdamTolerance);
  EXPECT_LT(max_relative(run, ref), kAdamTolerance);
  ASSERT_TRUE(run.pipeline.has_value());
  const PipelineMeasurement& m = *run.pipeline;
  EXPECT_EQ(m.compute_dtype, "float32");
  EXPECT_EQ(m.plan_dtype, "float32");  // gpt-tiny is float16; a plan for CPU ranks is float32
  EXPECT_EQ(m.recompute, "full");
  ASSERT_EQ(m.stages.size(), 2u);
  // One box per forward and backward of every micro-batch on every stage.
  EXPECT_EQ(m.timeline.boxes.size(), 2u * 4u * 2u);
  EXPECT_TRUE(m.timeline.measured);
  EXPECT_EQ(m.timeline.stage_labels.size(), 2u);
  EXPECT_EQ(m.peak_memory_bytes.size(), 4u);
  // Stage 1 has nothing to do until stage 0's first forward ends.
  double first_on_1 = 1e9, first_end_on_0 = 1e9;
  for (const auto& b : m.timeline.boxes) {
    if (b.rank == 1) first_on_1 = std::min(first_on_1, b.start);
    if (b.rank == 0 && !b.backward && b.micro_batch == 0) first_end_on_0 = b.end;
  }
  EXPECT_GE(first_on_1, first_end_on_0);
  EXPECT_GT(m.stages[1].idle_ms, 0);
}

TEST(PipelineTraining, WithoutRecomputationEveryMicroBatchInFlightKeepsItsActivations) {
  const auto o = options("sgd", 3);
  const Plan full = pipelined_plan(2, layout(2, 4, Recompute::Full));
  const Plan none = pipelined_plan(2, layout(2, 4, Recompute::None));
  const TrainingResult a = train_pipeline_on_threads(full, o);
  const TrainingResult b = train_pipeline_on_threads(none, o);
  const TrainingResult ref = train_one_rank(none, o);
  expect_matches(b, ref, 1e-5);
  expect_matches(a, ref, 1e-5);
  EXPECT_EQ(b.pipeline->recompute, "none");
  // Stage 0 holds 2 micro-batches at its peak (1F1B on 2 stages): without recomputation their
  // activations, with it only their inputs.
  EXPECT_GT(b.pipeline->memory[0].activations, 1.5 * a.pipeline->memory[0].activations);
}

// `--profile` on a pipelined plan: every operator of the model is timed on the stage that runs it
// (summed over its micro-batches), and named as the model names it.
TEST(PipelineTraining, ProfilesEveryOperatorOnItsStage) {
  const Plan plan = pipelined_plan(2, layout(2, 4));
  TrainingOptions o = options("sgd", 2);
  o.profile = true;
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  const Graph model = pipeline_model(plan);
  std::set<std::string> timed;
  for (const auto& p : run.profile) {
    ASSERT_TRUE(model.contains(p.node)) << p.name;
    EXPECT_EQ(model.node(p.node).op.name, p.name);
    EXPECT_GT(p.forward_ms, 0) << p.name;
    timed.insert(p.name);
  }
  for (const auto& [id, n] : model.nodes())
    if (is_compute_op(n.op.type)) {
      EXPECT_TRUE(timed.count(n.op.name)) << n.op.name;
    }
  // The first stage's embedding and the last stage's loss alike.
  EXPECT_TRUE(timed.count("embed.token"));
  EXPECT_TRUE(timed.count("loss"));
  o.profile = false;
  EXPECT_TRUE(train_pipeline_on_threads(plan, o).profile.empty());
}

TEST(PipelineTraining, ZeroShardsTheOptimizerAndTrainsTheSame) {
  const auto sgd = options("sgd", 3);
  const auto adam = options("adam", 3);
  const Plan zero0 = pipelined_plan(4, layout(2, 4, Recompute::Full, 0));
  const TrainingResult ref_adam = train_one_rank(zero0, adam);
  const TrainingResult base = train_pipeline_on_threads(zero0, adam);
  for (int zero : {1, 2, 3}) {
    const Plan plan = pipelined_plan(4, layout(2, 4, Recompute::Full, zero));
    EXPECT_EQ(plan.pipeline->zero_stage, zero);
    // SGD: the sums differ only in order.
    const TrainingResult s = train_pipeline_on_threads(plan, sgd);
    const TrainingResult s_ref = train_one_rank(plan, sgd);
    EXPECT_LT(max_relative(s, s_ref), 1e-6) << "ZeRO " << zero;
    // Adam divides by the gradients' running size, which magnifies the order of the sums where
    // a gradient is nearly zero (ZeRO 2 and 3 reduce-scatter every micro-batch's gradients).
    const TrainingResult a = train_pipeline_on_threads(plan, adam);
    expect_matches(a, ref_adam, kAdamTolerance);
    EXPECT_LT(max_relative(a, ref_adam), kAdamTolerance) << "ZeRO " << zero;
    EXPECT_EQ(a.pipeline->zero_stage, zero);
    // Each of the 2 copies keeps half of Adam's state (and of the fp32 weights it updates).
    EXPECT_NEAR(a.pipeline->memory[0].optimizer, base.pipeline->memory[0].optimizer * 3 / 4,
                base.pipeline->memory[0].optimizer * 0.02)
        << "ZeRO " << zero;
  }
}

TEST(PipelineTraining, InterleavedScheduleEqualsOneRank) {
  // 4 layers in 4 chunks, 2 per stage.
  const Plan plan = pipelined_plan(2, layout(2, 4, Recompute::Full, 0, 2), {.layers = 4});
  EXPECT_EQ(plan.pipeline->interleave, 2);
  const auto o = options("adam", 3);
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  expect_matches(run, train_one_rank(plan, o), kAdamTolerance);
  EXPECT_EQ(run.pipeline->timeline.boxes.size(), 2u * 4u * 2u * 2u);
  std::set<int> chunks;
  for (const auto& b : run.pipeline->timeline.boxes) chunks.insert(b.chunk);
  EXPECT_EQ(chunks.size(), 4u);
}

TEST(PipelineTraining, OneStageWithMicroBatchesAccumulatesGradients) {
  const Plan plan = pipelined_plan(1, layout(1, 4, Recompute::None));
  const auto o = options("sgd", 3);
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  const TrainingResult ref = train_one_rank(plan, o);
  expect_matches(run, ref, 1e-5);
  EXPECT_LT(max_relative(run, ref), 1e-5);
}

TEST(PipelineTraining, RefusesWhatItCannotRun) {
  Plan plan = pipelined_plan(4, layout(2, 4));
  EXPECT_THROW(check_pipeline_run(plan, 2), LoweringError);  // one rank per device
  plan.pipeline->tensor_parallel = 2;
  plan.pipeline->data_parallel = 1;
  plan.pipeline->kind_plans.clear();  // a plan file from before kind plans were kept
  try {
    check_pipeline_run(plan, 4);
    FAIL() << "a tensor-parallel plan without its segments' plans was accepted";
  } catch (const LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("plan it again"), std::string::npos) << e.what();
  }
}

// Megatron-LM's tensor parallelism inside each stage: the segments' planned PCGs (column- and
// row-parallel Linear, head-parallel attention, vocabulary-parallel embedding and head) lowered
// on the replica's devices, activations handed between segments and stages whole.
TEST(PipelineTraining, TensorParallelStagesEqualOneRank) {
  const auto o = options("sgd", 3);
  LayoutRequest tp2 = layout(2, 4);
  tp2.tensor_parallel = 2;
  const Plan plan = pipelined_plan(4, tp2);
  ASSERT_EQ(plan.pipeline->tensor_parallel, 2);
  ASSERT_EQ(plan.pipeline->data_parallel, 1);
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  const TrainingResult ref = train_one_rank(plan, o);
  expect_matches(run, ref, 1e-5);
  EXPECT_LT(max_relative(run, ref), 1e-5);
  EXPECT_EQ(run.pipeline->timeline.boxes.size(), 2u * 4u * 2u);
  EXPECT_EQ(run.pipeline->memory.size(), 2u);
  // With copies, ZeRO and no recomputation too: 1 stage x 2 copies x 2 devices.
  LayoutRequest mixed = layout(1, 2, Recompute::None, 1);
  mixed.tensor_parallel = 2;
  const Plan second = pipelined_plan(4, mixed);
  ASSERT_EQ(second.pipeline->data_parallel, 2);
  const TrainingResult run2 = train_pipeline_on_threads(second, o);
  expect_matches(run2, train_one_rank(second, o), 1e-5);
  // Adam magnifies the other order of the sums (tensor-parallel partial sums, the copies'
  // reduce-scatter) where a gradient is nearly zero: kAdamTolerance, as every Adam run here (on an
  // Intel Xeon, layers.1.mlp.fc2.weight differs by 2.9e-4 of its largest element).
  const auto adam = options("adam", 3);
  const TrainingResult run3 = train_pipeline_on_threads(second, adam);
  expect_matches(run3, train_one_rank(second, adam), kAdamTolerance);
}

// Heads of their own size (--head-dim 32 on gpt-tiny: 4 heads of 32 on hidden 64, w_q [64, 128]
// and w_o [128, 64]) split by Megatron-LM's tensor parallelism in two stages train as one rank.
TEST(PipelineTraining, HeadsOfTheirOwnSizeSplitByTensorParallelismEqualOneRank) {
  LayoutRequest tp2 = layout(2, 4);
  tp2.tensor_parallel = 2;
  const Plan plan = pipelined_plan(4, tp2, {.head_dim = 32});
  ASSERT_EQ(plan.pipeline->tensor_parallel, 2);
  const Graph model = pipeline_model(plan);
  int attentions = 0;
  for (const auto& [id, n] : model.nodes()) {
    if (n.op.type != OpType::MultiHeadAttention) continue;
    ++attentions;
    EXPECT_EQ(n.op.attrs.get_int("head_dim"), 32);
    EXPECT_EQ(model.shape(n.inputs[3]).sizes(), (std::vector<std::int64_t>{64, 128}));
  }
  EXPECT_EQ(attentions, 2);
  const auto o = options("sgd", 3);
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  const TrainingResult ref = train_one_rank(plan, o);
  expect_matches(run, ref, 1e-5);
  EXPECT_LT(max_relative(run, ref), 1e-5);
  EXPECT_EQ(ref.weights.at("layers.0.attention.w_q").values.size(), 64u * 128u);
}

TEST(PipelineTraining, PositionOfARank) {
  PipelinePlan p;
  p.tensor_parallel = 1;
  p.pipeline_stages = 2;
  p.data_parallel = 3;
  EXPECT_EQ(pipeline_position(p, 0).stage, 0);
  EXPECT_EQ(pipeline_position(p, 4).stage, 1);
  EXPECT_EQ(pipeline_position(p, 4).copy, 1);
}

}  // namespace
}  // namespace unity::executor
