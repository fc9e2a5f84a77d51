// Megatron-LM's Table 1 (Narayanan et al., SC'21; shared/reference/megatron-lm-table1.md): the
// ten published runs on Selene. Megatron's layout (--mode expert --tp t --pp p) is predicted within
// 10% of the published TFLOP/s per GPU, and the joint search's own plan (at a reduced budget here;
// the README has the full one) fits in 80 GB and is predicted at least as fast.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../error_spread.h"
#include "../megatron_table1.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"

using namespace unity;

namespace {

using Row = megatron::Table1Row;

class MegatronTable1 : public ::testing::TestWithParam<Row> {};

std::string table1_row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string n = info.param.model;
  for (char& c : n)
    if (c == '-' || c == '.') c = '_';
  return n;
}

}  // namespace

TEST_P(MegatronTable1, ExpertLayoutWithinTenPercentAndJointAtLeastAsFast) {
  const Row& row = GetParam();
  const MachineSpec selene = load_machine("selene", {0, row.gpus});
  const Graph model = load_model_for_devices(row.model, row.gpus, row.batch);
  const Plan megatron = optimize_plan(model, selene, megatron::layout_of(row));
  ASSERT_TRUE(megatron.pipeline);
  EXPECT_EQ(megatron.pipeline->tensor_parallel, row.tp);
  EXPECT_EQ(megatron.pipeline->pipeline_stages, row.pp);
  EXPECT_EQ(megatron.summary.dtype, "float16");
  EXPECT_EQ(megatron.summary.recompute, "full");
  const double predicted = megatron.summary.tflops_per_device;
  EXPECT_NEAR(predicted / row.published, 1.0, 0.10) << fmt::format(
      "{}: predicted {:.1f} TFLOP/s per GPU, published {}", row.model, predicted, row.published);
  EXPECT_TRUE(megatron.summary.fits_in_memory);

  OptimizeOptions joint;
  joint.mode = "joint";
  joint.budget = 4;
  const Plan plan = optimize_plan(model, selene, joint);
  EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.origin;
  EXPECT_LE(plan.summary.peak_memory_bytes, 80.0 * (1 << 30));
  EXPECT_LE(plan.summary.iteration_time_ms, megatron.summary.iteration_time_ms)
      << plan.summary.origin << " against " << megatron.summary.origin;
  // No plan computes faster than the A100's dense fp16 peak.
  EXPECT_LT(plan.summary.tflops_per_device, 312.0) << plan.summary.origin;
}

INSTANTIATE_TEST_SUITE_P(Selene, MegatronTable1, ::testing::ValuesIn(megatron::kTable1),
                         table1_row_name);

// What `unity optimize` states for A100 plans (published_accuracy.h) holds over every row.
TEST(PublishedAccuracyRecord, A100HoldsOverEveryRow) {
  unity::published_runs::ErrorSpread spread;
  for (const Row& row : megatron::kTable1) {
    const Plan plan =
        optimize_plan(load_model_for_devices(row.model, row.gpus, row.batch),
                      load_machine("selene", {0, row.gpus}), megatron::layout_of(row));
    spread.add(plan.summary.tflops_per_device, row.published);
  }
  const PublishedAccuracy& record = a100_published_accuracy();
  EXPECT_EQ(record.rows, 10);
  unity::published_runs::expect_record_holds(record, spread);
  EXPECT_EQ(published_accuracy(load_machine("selene"))->family, "A100");
}
