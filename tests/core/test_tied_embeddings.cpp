// A head tied to the token embedding (tied_weights.h), by hand on gpt-tiny (hidden 64, vocabulary
// 256: a 16,384-element table): counted once in the model; one tensor where one device holds both
// readers (a data-parallel plan, a one-stage pipeline); a copy on each of the first and last
// pipeline stages otherwise, whose gradients are all-reduced between the two after the backward.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/tied_weights.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::tied_embeddings_test {
namespace {

constexpr double kTable = 256 * 64;

NodeId weight_named(const Graph& g, const std::string& name) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Weight && n.op.name == name) return id;
  throw std::logic_error("no weight " + name);
}

Graph gpt_tiny(bool tied, std::int64_t batch = 4) {
  Graph g = zoo::build("gpt-tiny", batch);
  if (tied) tie_weight(g, weight_named(g, "head.weight"), "embed.token.weight");
  return g;
}

Plan pipelined(const Graph& model, int stages) {
  const MachineSpec m = load_machine("dgx-a100", {0, stages});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = stages;
  o.layout.micro_batches = 4;
  return optimize_plan(model, m, o);
}

}  // namespace

TEST(TiedEmbeddings, TheTableCountsOnce) {
  const Graph untied = gpt_tiny(false), tied = gpt_tiny(true);
  EXPECT_EQ(untied.parameter_count() - tied.parameter_count(), kTable);
  EXPECT_EQ(tied_copies(tied).size(), 1u);
  EXPECT_EQ(*tied_partner(tied, weight_named(tied, "head.weight")),
            weight_named(tied, "embed.token.weight"));
  Graph bad = gpt_tiny(false);
  EXPECT_THROW(tie_weight(bad, weight_named(bad, "head.weight"), "embed.position.weight"),
               std::logic_error);
}

TEST(TiedEmbeddings, TheFamiliesTieOnRequest) {
  zoo::TransformerResize tie;
  tie.tie_embeddings = true;
  for (const char* member : {"gpt-tiny", "llama-tiny"}) {
    const Graph untied = zoo::build(member, 4), tied = zoo::build(member, 4, tie);
    ASSERT_EQ(tied_copies(tied).size(), 1u) << member;
    const NodeId head = *tied_copies(tied).begin();
    const double table = static_cast<double>(tied.node(head).outputs[0].num_elements());
    EXPECT_EQ(untied.parameter_count() - tied.parameter_count(), table) << member;
    EXPECT_NE(tied.name.find("tied"), std::string::npos) << tied.name;
  }
  EXPECT_THROW(zoo::build("mnist-mlp", 4, tie), InputError);
}

TEST(TiedEmbeddings, OneStageHoldsOneTable) {
  const Plan untied = pipelined(gpt_tiny(false), 1), tied = pipelined(gpt_tiny(true), 1);
  ASSERT_TRUE(untied.pipeline && tied.pipeline);
  // fp16 weights: 2 bytes each, and Adam's 12; nothing to all-reduce between stages.
  EXPECT_DOUBLE_EQ(untied.pipeline->rank_memory[0].weights - tied.pipeline->rank_memory[0].weights,
                   kTable * 2);
  EXPECT_DOUBLE_EQ(
      untied.pipeline->rank_memory[0].optimizer - tied.pipeline->rank_memory[0].optimizer,
      kTable * 12);
  EXPECT_DOUBLE_EQ(tied.pipeline->sync_time, untied.pipeline->sync_time);
}

TEST(TiedEmbeddings, TheFirstAndLastStageEachKeepACopyAndSumTheirGradients) {
  const Plan untied = pipelined(gpt_tiny(false), 2), tied = pipelined(gpt_tiny(true), 2);
  ASSERT_TRUE(untied.pipeline && tied.pipeline);
  for (int r = 0; r < 2; ++r)
    EXPECT_DOUBLE_EQ(tied.pipeline->rank_memory[r].weights,
                     untied.pipeline->rank_memory[r].weights);
  // One all-reduce of the table's fp16 gradient between the two stages' GPUs, over NVLink (300
  // GB/s, 2 us): a ring of two sends the buffer once, in two steps.
  const double bytes = kTable * 2;
  const double expected = bytes / 300e9 + 2 * 2e-6;
  EXPECT_NEAR(tied.pipeline->sync_time - untied.pipeline->sync_time, expected, 0.2 * expected);
  EXPECT_GT(tied.pipeline->sync_time, untied.pipeline->sync_time);
}

TEST(TiedEmbeddings, ADataParallelPlanHoldsOneTablePerDevice) {
  const MachineSpec m = load_machine("dgx-a100", {0, 2});
  OptimizeOptions o;
  o.mode = "data-parallel";
  const Plan untied = optimize_plan(gpt_tiny(false, 8), m, o);
  const Plan tied = optimize_plan(gpt_tiny(true, 8), m, o);
  // Weight, gradient, Adam's fp32 master, momentum and variance: 2 + 2 + 4 + 8 bytes a parameter.
  EXPECT_DOUBLE_EQ(untied.summary.peak_memory_bytes - tied.summary.peak_memory_bytes, kTable * 16);
  EXPECT_LT(tied.summary.communication_bytes, untied.summary.communication_bytes);
}

}  // namespace unity::tied_embeddings_test
