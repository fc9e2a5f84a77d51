// The joint search against the baselines on the paper's machine (paper 6.2, Fig. 14 and 15b): for
// every zoo model on 1, 2 and 4 Summit nodes, the joint search's own plan (no baseline costed
// beside it, origin "joint search") is never slower than the sequential pipeline's or data
// parallelism, and strictly faster than data parallelism where the paper reports the largest gains.
// Without pipeline layouts, as in the paper's comparison (the sequential pipeline has none). The
// budget is below the CLI's default (200) to keep the suite fast; the README's table uses the
// default. At 80 and 100, dlrm on one node ends 0.6-1.1% behind sequential: the search's mapping
// estimate prices its tables as Embedding + ReduceSum below EmbeddingBag, and the exact cost of the
// plan does not.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>

#include "unity/core/errors.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

struct Case {
  std::string model;
  int nodes;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " on " << c.nodes << " nodes"; }

std::string name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model + "_" + std::to_string(info.param.nodes) + "nodes";
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

Plan plan(const std::string& mode, const Case& c) {
  OptimizeOptions o;
  o.mode = mode;
  o.budget = 120;
  o.pipelines = false;
  o.baselines = false;
  const MachineSpec machine = load_machine("summit", {c.nodes, 0});
  return optimize_plan(load_model_for_devices(c.model, machine.num_devices()), machine, o);
}

// Plans that fit beat plans that do not; among plans that fit, the faster wins.
double rank(const PlanSummary& s) {
  return s.fits_in_memory ? s.iteration_time_ms : 1e12 + s.peak_memory_bytes;
}

class JointVsBaselines : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(JointVsBaselines, TheSearchsOwnPlanIsNeverWorseAndBeatsDataParallelWhereThePaperDoes) {
  const Case& c = GetParam();
  const PlanSummary joint = plan("joint", c).summary;
  EXPECT_EQ(joint.origin, "joint search");
  for (const char* mode : {"sequential", "data-parallel"}) {
    const PlanSummary s = plan(mode, c).summary;
    EXPECT_LE(rank(joint), rank(s) * (1 + 1e-9)) << mode << ": " << s.iteration_time_ms << " ms";
    EXPECT_TRUE(joint.fits_in_memory || !s.fits_in_memory) << mode;
  }
  // Paper Fig. 14: the models where Unity gains most over data parallelism.
  const PlanSummary dp = plan("data-parallel", c).summary;
  for (const char* m : {"dlrm", "xdl", "candle-uno", "mlp", "inception-v3"})
    if (c.model == m) {
      EXPECT_TRUE(joint.fits_in_memory);
      EXPECT_LT(joint.iteration_time_ms, dp.iteration_time_ms);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Summit, JointVsBaselines,
    ::testing::Values(Case{"mnist-mlp", 1}, Case{"mnist-mlp", 2}, Case{"mnist-mlp", 4},
                      Case{"mlp", 1}, Case{"mlp", 2}, Case{"mlp", 4}, Case{"resnext50", 1},
                      Case{"resnext50", 2}, Case{"resnext50", 4}, Case{"inception-v3", 1},
                      Case{"inception-v3", 2}, Case{"inception-v3", 4}, Case{"bert-large", 1},
                      Case{"bert-large", 2}, Case{"bert-large", 4}, Case{"dlrm", 1},
                      Case{"dlrm", 2}, Case{"dlrm", 4}, Case{"xdl", 1}, Case{"xdl", 2},
                      Case{"xdl", 4}, Case{"candle-uno", 1}, Case{"candle-uno", 2},
                      Case{"candle-uno", 4}),
    name);

namespace {

// Attention split by heads leaves partial sums (replica > 1) after its output projection; a
// row-parallel (reduction-parallel) Linear does too.
struct MegatronCount {
  int head_parallel = 0;
  int reduction_parallel = 0;
};

MegatronCount megatron_like(const Graph& g) {
  MegatronCount c;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type == OpType::MultiHeadAttention && n.outputs[0].replica > 1) ++c.head_parallel;
    if (n.op.type == OpType::Linear && n.outputs[0].replica > 1) ++c.reduction_parallel;
  }
  return c;
}

}  // namespace

// Paper 6.2: Unity re-discovers Megatron-LM's strategy for BERT. On two Summit nodes every one of
// the 24 layers has head-parallel attention and a column- then row-parallel MLP. (On one node the
// 16 heads force a tensor-parallel pair across the X-Bus, 3 GPUs per socket, which the cost model
// prices above data parallelism: the best plan found there has none.) Without pipeline layouts, as
// in the paper's comparison: with them, a pipeline of data-parallel stages is faster here
// (docs/large-models.md, Figure 15a).
TEST(JointSearch, BertLargeFindsMegatronLikeParallelism) {
  OptimizeOptions o;
  o.mode = "joint";
  o.pipelines = false;
  const MachineSpec machine = load_machine("summit", {2, 0});
  const Plan p =
      optimize_plan(load_model_for_devices("bert-large", machine.num_devices()), machine, o);
  const MegatronCount c = megatron_like(p.pcg);
  EXPECT_GE(c.head_parallel, 24);
  EXPECT_GE(c.reduction_parallel, 24);
}
