// How a throughput counts a causal attention (flop_count.h): in full, as Megatron-LM did before
// Megatron-Core 0.12, or at its unmasked half, as Megatron-Core counts since. The count changes
// the TFLOP/s a plan reports, never its time. Figures by hand.
#include <gtest/gtest.h>

#include "unity/core/cost/flop_count.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::flop_count_test {
namespace {

// llama-tiny, 4 sequences: 2 layers of 4 heads of 16 over 32 positions, causal. A layer's two
// products (scores and context) run 2 x 4 x 4 x 32 x 32 x (16 + 16) = 1,048,576 FLOPs forward
// unmasked; the causal count leaves half of that out, for both layers: 1,048,576 FLOPs.
constexpr double kMaskedHalfForward = 1048576;

TEST(FlopCount, CausalCountLeavesOutTheMaskedHalfOfEachCausalAttention) {
  const Graph g = load_model_for_devices("llama-tiny", 1, 4);
  EXPECT_DOUBLE_EQ(
      dense_forward_flops(g, FlopCount::Full) - dense_forward_flops(g, FlopCount::Causal),
      kMaskedHalfForward);
}

TEST(FlopCount, ChangesTheReportedThroughputNotThePredictedTime) {
  const Graph g = load_model_for_devices("llama-tiny", 1, 4);
  const MachineSpec machine = load_machine("dgx-h100", {0, 1});
  OptimizeOptions full;
  full.mode = "data-parallel";
  OptimizeOptions causal = full;
  causal.flop_count = FlopCount::Causal;
  const Plan a = optimize_plan(g, machine, full);
  const Plan b = optimize_plan(g, machine, causal);
  EXPECT_DOUBLE_EQ(a.summary.iteration_time_ms, b.summary.iteration_time_ms);
  // Forward and backward: three times the forward's count.
  EXPECT_DOUBLE_EQ(a.summary.model_flops_per_iteration - b.summary.model_flops_per_iteration,
                   3 * kMaskedHalfForward);
  EXPECT_EQ(a.summary.flop_count, "full");
  EXPECT_EQ(b.summary.flop_count, "causal");
  EXPECT_LT(b.summary.tflops_per_device, a.summary.tflops_per_device);
}

TEST(FlopCount, OnlyAModelWithACausalAttentionHasTwoCounts) {
  EXPECT_TRUE(has_causal_attention(load_model_for_devices("llama-tiny", 1, 4)));
  EXPECT_TRUE(has_causal_attention(load_model_for_devices("gpt-tiny", 1, 4)));
  // BERT's attention is bidirectional; a CNN has none: their reports name no count.
  EXPECT_FALSE(has_causal_attention(load_model_for_devices("bert-large", 1, 4)));
  EXPECT_FALSE(has_causal_attention(load_model_for_devices("resnext50", 1, 4)));
}

TEST(FlopCount, NamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(flop_count_from_string("causal"), FlopCount::Causal);
  EXPECT_EQ(flop_count_from_string("full"), FlopCount::Full);
  EXPECT_THROW(flop_count_from_string("half"), InputError);
}

}  // namespace
}  // namespace unity::flop_count_test
