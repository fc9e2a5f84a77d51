// Context parallelism on the executor: a decoder planned with --cp 2 (alone, with --tp 2, and with
// --pp 2) runs each segment on its sequence shard's 16 of 32 positions, the attentions' keys and
// values gathered from both shards, and trains equal to one rank.
#include <gtest/gtest.h>

#include <set>

#include "executor_test_support.h"
#include "pipeline_test_support.h"
#include "unity/core/pipeline/context_parallel_plan.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/pipeline_training.h"

namespace unity::executor {
namespace {

using testing::expect_matches;

// A decoder of the zoo planned in Megatron-LM's layout with the sequence split over cp devices.
Plan context_parallel_plan_of(const std::string& model_name, int tp, int pp, int cp,
                              int micro_batches) {
  const int devices = tp * pp * cp;
  const Graph model = load_model_for_devices(model_name, devices);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = tp;
  o.layout.pipeline_stages = pp;
  o.layout.context_parallel = cp;
  o.layout.micro_batches = micro_batches;
  o.layout.recompute = Recompute::Full;
  o.layout.zero_stage = 0;
  Plan plan = optimize_plan(model, load_machine("cpu-local", {0, devices}), o);
  EXPECT_TRUE(plan.pipeline.has_value());
  EXPECT_EQ(plan.pipeline->context_parallel, cp);
  EXPECT_EQ(plan.pipeline->data_parallel, 1);
  return plan;
}

TrainingOptions sgd(int iterations = 3) {
  TrainingOptions o;
  o.iterations = iterations;
  o.optimizer = "sgd";
  o.collect_weights = true;
  return o;
}

using testing::train_one_rank;
using testing::train_pipeline_on_threads;

// The attention segment of `plan` as the executor lowers it for a stage replica: the kind's
// tensor-parallel plan (or the serial segment with one tensor-parallel device) split by sequence.
Program lowered_attention(const Plan& plan) {
  const PipelinePlan& p = *plan.pipeline;
  const Graph model = pipeline_model(plan);
  const SegmentChain chain = segment_chain(model);
  for (int i = 0; i < static_cast<int>(chain.segments.size()); ++i) {
    const Segment& seg = chain.segments[i];
    const ChunkGraph cg = chunk_graph(model, chain, i, i, p.micro_batch_size);
    if (cg.graph.count(OpType::MultiHeadAttention) == 0) continue;
    Graph g = cg.graph;
    std::map<NodeId, MachineView> views = single_device_views(g);
    if (p.tensor_parallel > 1) {
      g = executed_graph(p.kind_plans[seg.kind].pcg);
      views = p.kind_plans[seg.kind].views;
    }
    const ContextParallelPlan split =
        context_parallel_plan(g, views, p.tensor_parallel, p.context_parallel, 32);
    LoweringOptions lo;
    lo.require_loss = false;
    return lower_plan(split.pcg, split.views, p.grid().replica(), lo);
  }
  ADD_FAILURE() << "no attention segment";
  return {};
}

// Each attention task reads its shard's rows of the queries and all 32 positions of the keys
// and values, on its own device (tensor ranks innermost).
void expect_split_attention(const Plan& plan) {
  const PipelinePlan& p = *plan.pipeline;
  const Program program = lowered_attention(plan);
  const Step* step = nullptr;
  for (const auto& s : program.steps)
    if (program.graph.node(s.node).op.type == OpType::MultiHeadAttention) step = &s;
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->tasks.size(), static_cast<std::size_t>(p.grid().replica()));
  std::set<int> ranks;
  for (const Task& t : step->tasks) {
    ranks.insert(t.rank);
    const int shard = t.rank / p.tensor_parallel;
    const Region& q = t.inputs.at(0).region;
    EXPECT_EQ(q.begin[1], 16 * shard) << "task " << t.index;
    EXPECT_EQ(q.end[1], 16 * (shard + 1)) << "task " << t.index;
    for (int kv : {1, 2}) {
      EXPECT_EQ(t.inputs.at(kv).region.begin[1], 0);
      EXPECT_EQ(t.inputs.at(kv).region.end[1], 32);
    }
  }
  EXPECT_EQ(ranks.size(), static_cast<std::size_t>(p.grid().replica()));
}

TEST(ContextParallelTraining, TwoSequenceShardsEqualOneRank) {
  // llama-tiny: rotary positions, a causal mask and grouped queries, 32 positions.
  const Plan plan = context_parallel_plan_of("llama-tiny", 1, 1, 2, 2);
  expect_split_attention(plan);
  const auto o = sgd();
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  expect_matches(run, train_one_rank(plan, o), 1e-5);
  EXPECT_LT(run.losses.back(), run.losses.front());
  EXPECT_EQ(run.pipeline->peak_memory_bytes.size(), 2u);
}

TEST(ContextParallelTraining, LearnedPositionsSplitBySequenceEqualOneRank) {
  // gpt-tiny reads its positions' embeddings (an Input of position ids, split like the tokens).
  const Plan plan = context_parallel_plan_of("gpt-tiny", 1, 1, 2, 1);
  const auto o = sgd();
  expect_matches(train_pipeline_on_threads(plan, o), train_one_rank(plan, o), 1e-5);
}

TEST(ContextParallelTraining, TensorParallelTimesSequenceShardsEqualOneRank) {
  const Plan plan = context_parallel_plan_of("llama-tiny", 2, 1, 2, 2);
  ASSERT_EQ(plan.pipeline->grid().replica(), 4);
  expect_split_attention(plan);
  const auto o = sgd();
  expect_matches(train_pipeline_on_threads(plan, o), train_one_rank(plan, o), 1e-5);
}

TEST(ContextParallelTraining, PipelineStagesOfSequenceShardsEqualOneRank) {
  const Plan plan = context_parallel_plan_of("llama-tiny", 1, 2, 2, 4);
  ASSERT_EQ(plan.pipeline->pipeline_stages, 2);
  const auto o = sgd();
  const TrainingResult run = train_pipeline_on_threads(plan, o);
  expect_matches(run, train_one_rank(plan, o), 1e-5);
  // Rank 2 is stage 1's first shard (tp-cp-dp-pp: each stage's 2 shards adjacent).
  EXPECT_EQ(pipeline_position(*plan.pipeline, 2).stage, 1);
  EXPECT_EQ(run.pipeline->timeline.boxes.size(), 2u * 4u * 2u);
}

TEST(ContextParallelTraining, RanksFollowTheGrid) {
  Plan plan = context_parallel_plan_of("llama-tiny", 1, 1, 2, 2);
  try {
    check_pipeline_run(plan, 1);
    FAIL() << "a plan of 2 sequence shards ran on 1 rank";
  } catch (const LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("2 sequence shards"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_pipeline_run(plan, 2));
}

}  // namespace
}  // namespace unity::executor
