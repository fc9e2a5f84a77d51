// Megatron-LM's weak-scaling runs on H100 (../shared/reference/h100-dense-runs.md, section 1),
// each planned with its published layout fixed (tests/h100_dense_runs.h), against the published
// TFLOP/s per GPU. No constant was fitted to these rows: the H100's datasheet peaks and SM count,
// the efficiency factors every device has, and the mechanisms of docs/cost-model.md.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../error_spread.h"
#include "../h100_dense_runs.h"

namespace unity::h100_test {
namespace {

using h100::DenseRun;

class MegatronH100 : public ::testing::TestWithParam<DenseRun> {};

std::string row_name(const ::testing::TestParamInfo<DenseRun>& info) {
  std::string n = std::string("gpt_") + info.param.name;
  for (char& c : n)
    if (c == '.') c = '_';
  return n;
}

}  // namespace

TEST_P(MegatronH100, PublishedLayoutPredictedNearThePublishedThroughput) {
  const DenseRun& run = GetParam();
  const MachineSpec machine = h100::nonblocking_h100(run.gpus);
  const Plan plan = optimize_plan(h100::model_of(run), machine, h100::layout_of(run));
  ASSERT_TRUE(plan.pipeline);
  EXPECT_EQ(plan.pipeline->tensor_parallel, run.tp);
  EXPECT_EQ(plan.pipeline->pipeline_stages, run.pp);
  EXPECT_EQ(plan.pipeline->data_parallel, 48);
  EXPECT_TRUE(plan.pipeline->overlap_grad_reduce);
  EXPECT_EQ(plan.pipeline->tp_comm_overlap, run.tp > 1);
  EXPECT_EQ(plan.summary.dtype, "bfloat16");
  EXPECT_TRUE(plan.summary.fits_in_memory);
  const double ratio = plan.summary.tflops_per_device / run.published;
  const std::string what =
      fmt::format("{}: predicted {:.1f} TFLOP/s per GPU, published {} ({})", run.name,
                  plan.summary.tflops_per_device, run.published, plan.summary.origin);
  if (run.tp >= 4) {
    EXPECT_NEAR(ratio, 1.0, 0.10) << what;
  } else {
    // The two smallest models: the planner's one micro-batch of four sequences hides the whole
    // data-parallel reduce behind the backward pass, and their small GEMMs and memory-bound
    // kernels cost more than the model says (docs/accuracy.md). Issue 29 stays open on these.
    EXPECT_GT(ratio, 1.0) << what;
    EXPECT_LT(ratio, 1.40) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(NonBlockingH100, MegatronH100,
                         ::testing::ValuesIn(h100::kMegatronWeakScaling), row_name);

}  // namespace unity::h100_test

namespace unity::h100_test {

// What `unity optimize` states for H100 plans (published_accuracy.h) holds over every row.
TEST(PublishedAccuracyRecord, H100HoldsOverEveryRow) {
  published_runs::ErrorSpread spread;
  for (const auto& run : h100::kMegatronWeakScaling) {
    const Plan plan =
        optimize_plan(h100::model_of(run), h100::nonblocking_h100(run.gpus), h100::layout_of(run));
    spread.add(plan.summary.tflops_per_device, run.published);
  }
  const PublishedAccuracy& record = h100_published_accuracy();
  EXPECT_EQ(record.rows, 9);
  published_runs::expect_record_holds(record, spread);
  const auto stated = published_accuracy(h100::nonblocking_h100(8));
  ASSERT_TRUE(stated);
  EXPECT_EQ(stated->family, "H100");
  EXPECT_EQ(stated->describe().rfind("H100: 7 of 9 published runs within 10% (-4.8% to +38.2%", 0),
            0u);
  EXPECT_FALSE(published_accuracy(load_machine("summit")));
}

}  // namespace unity::h100_test
