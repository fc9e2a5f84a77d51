// Megatron-LM's weak-scaling runs on H100 (../shared/reference/h100-dense-runs.md, section 1),
// each planned with its published layout fixed (tests/h100_dense_runs.h), against the published
// TFLOP/s per GPU. No constant was fitted to these rows: the H100's datasheet peaks and SM count,
// the efficiency factors every device has, and the mechanisms of docs/cost-model.md.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "../error_spread.h"
#include "../h100_dense_runs.h"
#include "../nemo_runs.h"

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
  const std::string name = run.name;
  if (name != "119B") {
    EXPECT_NEAR(ratio, 1.0, 0.10) << what;
  } else {
    // Predicted too fast: the 119B model with micro-batches of two (docs/accuracy.md). Issue 29
    // stays open on it.
    EXPECT_GT(ratio, 1.10) << what;
    EXPECT_LT(ratio, 1.30) << what;
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
  for (const auto& run : h100::kLlama3Pretraining) {
    const Plan plan =
        optimize_plan(h100::llama3_model(run), h100::llama3_cluster(run), h100::llama3_layout());
    spread.add(plan.summary.tflops_per_device, run.published);
  }
  const Plan long_context =
      optimize_plan(h100::llama3_long_context_model(),
                    load_machine("dgx-h100", {0, h100::kLlama3LongContextGpus}),
                    h100::llama3_long_context_layout());
  spread.add(long_context.summary.tflops_per_device, h100::kLlama3LongContextPublished);
  const Plan fp8 = optimize_plan(h100::fp8_llama70b_model(), load_machine("dgx-h100", {0, 64}),
                                 h100::fp8_llama70b_layout());
  spread.add(fp8.summary.tflops_per_device, h100::kFp8Llama70bPublished);
  for (const auto& run : h100::kFp8ContextRuns) {
    const Plan plan =
        optimize_plan(h100::fp8_context_model(run), load_machine("dgx-h100", {0, run.gpus}),
                      h100::fp8_context_layout(run));
    spread.add(plan.summary.tflops_per_device, run.published);
  }
  for (const auto& run : nemo::kNemoFp8Runs)
    if (std::string(run.machine) == "dgx-h100") {
      const Plan plan = nemo::plan_of(run);
      spread.add(nemo::tokens_per_second(run, plan), run.published);
    }
  const PublishedAccuracy& record = h100_published_accuracy();
  EXPECT_EQ(record.rows, 18);
  published_runs::expect_record_holds(record, spread);
  const auto stated = published_accuracy(h100::nonblocking_h100(8));
  ASSERT_TRUE(stated);
  EXPECT_EQ(stated->family, "H100");
  EXPECT_EQ(
      stated->describe().rfind("H100: 16 of 18 published runs within 10% (-8.5% to +45.0%", 0), 0u);
  EXPECT_FALSE(published_accuracy(load_machine("summit")));
}

}  // namespace unity::h100_test

namespace unity::h100_test {

// Llama 3 405B's pre-training runs without context parallelism, planned with the published layout
// (tests/h100_dense_runs.h, llama3_layout) on the Llama 3 cluster.
TEST(Llama3H100, PublishedLayoutFitsAndIsPredictedNearThePublishedThroughput) {
  for (const auto& run : h100::kLlama3Pretraining) {
    const Plan plan =
        optimize_plan(h100::llama3_model(run), h100::llama3_cluster(run), h100::llama3_layout());
    ASSERT_TRUE(plan.pipeline);
    const PipelinePlan& p = *plan.pipeline;
    EXPECT_EQ(p.tensor_parallel, 8);
    EXPECT_EQ(p.pipeline_stages, 16);
    EXPECT_EQ(p.data_parallel, run.gpus / 128);
    EXPECT_EQ(p.zero_stage, 2);
    EXPECT_EQ(p.device_order, DeviceOrder::DataParallelOutermost);
    // Without recomputation the weights, the sharded state and the in-flight micro-batches of 8
    // layers fit in 80 GiB only as the frameworks keep activations (fused attention and SwiGLU).
    EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.peak_memory_bytes / double(1 << 30);
    // The first and last stages hold one layer fewer (7, 8 x 14, 7 layers on 16 ranks).
    const auto layers = [&](const StagePlan& c) { return c.last_layer - c.first_layer + 1; };
    int first = 0, last = 0;
    for (const auto& c : p.chunks) {
      if (c.rank == 0) first += layers(c);
      if (c.rank == 15) last += layers(c);
    }
    EXPECT_EQ(first, 7);
    EXPECT_EQ(last, 7);
    EXPECT_NEAR(plan.summary.tflops_per_device / run.published, 1.0, 0.10)
        << run.gpus << " GPUs: predicted " << plan.summary.tflops_per_device << ", published "
        << run.published << " (" << plan.summary.origin << ")";
  }
}

// The long-context row of Table 4: 131,072 tokens a sequence over CP 16, the keys and values
// all-gathered. It plans and fits as published; its throughput is not reproduced (+50.5%,
// docs/accuracy.md): at this length the attention is 57% of the FLOP count.
TEST(Llama3H100, LongContextRowPlansAndFitsWithContextParallelism) {
  const Plan plan = optimize_plan(h100::llama3_long_context_model(),
                                  load_machine("dgx-h100", {0, h100::kLlama3LongContextGpus}),
                                  h100::llama3_long_context_layout());
  ASSERT_TRUE(plan.pipeline);
  const PipelinePlan& p = *plan.pipeline;
  EXPECT_EQ(p.tensor_parallel, 8);
  EXPECT_EQ(p.context_parallel, 16);
  EXPECT_EQ(p.context_exchange, ContextExchange::AllGather);
  EXPECT_EQ(p.pipeline_stages, 16);
  EXPECT_EQ(p.data_parallel, 8);
  EXPECT_GT(p.cp_time, 0);
  EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.peak_memory_bytes / double(1 << 30);
  std::printf(
      "llama3-405b 131,072 tokens TP8 CP16 PP16 DP8: %.1f TFLOP/s predicted, %.0f "
      "published (%+.1f%%)\n",
      plan.summary.tflops_per_device, h100::kLlama3LongContextPublished,
      100 * (plan.summary.tflops_per_device / h100::kLlama3LongContextPublished - 1));
}

}  // namespace unity::h100_test

namespace unity::h100_test {

// Llama 3 70B in FP8 on 64 H100s with Megatron-LM's published layout: GEMMs at the fp8 peak.
TEST(Fp8H100, Llama3_70bPublishedLayoutPredictedNearThePublishedThroughput) {
  const Plan plan = optimize_plan(h100::fp8_llama70b_model(), load_machine("dgx-h100", {0, 64}),
                                  h100::fp8_llama70b_layout());
  ASSERT_TRUE(plan.pipeline);
  EXPECT_EQ(plan.summary.dtype, "fp8");
  EXPECT_EQ(plan.pipeline->interleave, 5);
  EXPECT_EQ(plan.pipeline->data_parallel, 2);
  EXPECT_TRUE(plan.summary.fits_in_memory);
  EXPECT_NEAR(plan.summary.tflops_per_device / h100::kFp8Llama70bPublished, 1.0, 0.10)
      << plan.summary.tflops_per_device << " (" << plan.summary.origin << ")";
}

}  // namespace unity::h100_test

namespace unity::h100_test {

// The FP8 table publishes tokens/s beside TFLOP/s, so their ratio is the FLOPs it counts a token:
// 800e12 / 13,812, 780e12 / 1,621 and 834e12 / 315. Unity's full count (flop_count.h) gives the
// same within 1%, the causal count 4-11% less: NeMo's performance scripts, which the table follows,
// count a causal attention in full.
TEST(Fp8H100, PublishedThroughputIsTheFullCount) {
  struct Row {
    Graph model;
    MachineSpec machine;
    OptimizeOptions layout;
    double batch, tokens_per_gpu, tflops;
  };
  std::vector<Row> rows;
  rows.push_back({h100::fp8_llama70b_model(), load_machine("dgx-h100", {0, 64}),
                  h100::fp8_llama70b_layout(), 128, 1621, 780});
  for (const auto& run : h100::kFp8ContextRuns)
    rows.push_back({h100::fp8_context_model(run), load_machine("dgx-h100", {0, run.gpus}),
                    h100::fp8_context_layout(run), static_cast<double>(run.batch),
                    run.gpus == 8 ? 13812.0 : 315.0, run.published});
  for (auto& row : rows) {
    const double published = row.tflops / row.tokens_per_gpu;  // TFLOP a token
    const double tokens = row.batch * 8192;
    const Plan full = optimize_plan(row.model, row.machine, row.layout);
    row.layout.flop_count = FlopCount::Causal;
    const Plan causal = optimize_plan(row.model, row.machine, row.layout);
    EXPECT_NEAR(full.summary.model_flops_per_iteration / tokens / 1e12 / published, 1.0, 0.01);
    EXPECT_LT(causal.summary.model_flops_per_iteration / tokens / 1e12 / published, 0.97);
  }
}

// Megatron-LM's FP8 runs with context parallelism, planned with their published layouts: the
// sequence split over 2 devices, the keys and values ringed behind the attention.
TEST(Fp8H100, ContextParallelRunsPredictedNearThePublishedThroughput) {
  for (const auto& run : h100::kFp8ContextRuns) {
    const Plan plan =
        optimize_plan(h100::fp8_context_model(run), load_machine("dgx-h100", {0, run.gpus}),
                      h100::fp8_context_layout(run));
    ASSERT_TRUE(plan.pipeline);
    EXPECT_EQ(plan.summary.dtype, "fp8");
    EXPECT_EQ(plan.pipeline->context_parallel, 2);
    EXPECT_EQ(plan.summary.cp, 2);
    EXPECT_EQ(plan.pipeline->data_parallel, run.gpus / (run.tp * run.pp * 2));
    EXPECT_GT(plan.pipeline->cp_bytes, 0);
    // With the recipe's fp8 weights and bf16 gradients they fit, as they ran.
    EXPECT_TRUE(plan.summary.fits_in_memory) << plan.summary.peak_memory_bytes / double(1 << 30);
    EXPECT_NEAR(plan.summary.tflops_per_device / run.published, 1.0, 0.10)
        << run.model << ": " << plan.summary.tflops_per_device << " (" << plan.summary.origin
        << ")";
  }
}

}  // namespace unity::h100_test
