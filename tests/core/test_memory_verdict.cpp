// The memory verdict beside every plan (memory_verdict.h): fits, tight under a tenth of the
// device to spare, does not fit; with the margin, by hand.
#include <gtest/gtest.h>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/memory_verdict.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::memory_verdict_test {
namespace {

constexpr double kGiB = double(1 << 30);

TEST(MemoryVerdict, FitsTightOrNotWithItsMargin) {
  const MemoryVerdict fits = memory_verdict(60 * kGiB, 80 * kGiB);
  EXPECT_EQ(fits.fit, MemoryFit::Fits);
  EXPECT_DOUBLE_EQ(fits.margin, 20 * kGiB);
  EXPECT_EQ(fits.describe(), "fits, 20.0 GiB to spare");
  // 77 of 80 GiB: 3 GiB is under the 8 GiB tenth.
  const MemoryVerdict tight = memory_verdict(77 * kGiB, 80 * kGiB);
  EXPECT_EQ(tight.fit, MemoryFit::Tight);
  EXPECT_EQ(tight.describe(), "tight: 3.0 GiB to spare of 80.0 GiB");
  EXPECT_EQ(memory_verdict(72 * kGiB, 80 * kGiB).fit, MemoryFit::Fits);  // exactly a tenth
  const MemoryVerdict over = memory_verdict(113 * kGiB, 80 * kGiB);
  EXPECT_EQ(over.fit, MemoryFit::DoesNotFit);
  EXPECT_DOUBLE_EQ(over.margin, -33 * kGiB);
  EXPECT_EQ(over.describe(), "does not fit: 33.0 GiB over 80.0 GiB");
  EXPECT_EQ(to_string(MemoryFit::DoesNotFit), "does-not-fit");
}

// The floor under any layout: weights, gradients and optimizer state whole, over the device.
TEST(MemoryVerdict, TheModelStateFloorCountsBytesAParameterAndDevices) {
  // bf16 with Adam: 2 (weights) + 4 (fp32 gradients) + 12 (fp32 master weights, two moments) =
  // 18 bytes; Llama 3.1 8B's 8,030,261,248 parameters take 134.6 GiB, 1.68 devices of 80 GiB.
  const double llama = 8030261248.0;
  const ModelStateFloor bf16 =
      model_state_floor(llama, DataType::BFloat16, Optimizer::Adam, 80 * kGiB);
  EXPECT_DOUBLE_EQ(bf16.bytes, 18 * llama);
  EXPECT_EQ(bf16.devices, 2);
  EXPECT_EQ(bf16.describe(llama, 80 * kGiB),
            "the weights, gradients and optimizer state are 134.6 GiB (18 bytes a parameter): "
            "fully sharded (ZeRO-3), at least 2 devices of 80.0 GiB before any activation");
  // fp32 with Adam: 4 + 4 + 8 = 16; with SGD 4 + 4 = 8.
  EXPECT_DOUBLE_EQ(model_state_floor(1e9, DataType::Float32, Optimizer::Adam, kGiB).bytes, 16e9);
  EXPECT_DOUBLE_EQ(model_state_floor(1e9, DataType::Float32, Optimizer::SGD, kGiB).bytes, 8e9);
  EXPECT_EQ(model_state_floor(1e9, DataType::Float32, Optimizer::SGD, kGiB).devices, 8);
}

TEST(MemoryVerdict, EveryPlanCarriesIt) {
  const MachineSpec h100 = load_machine("dgx-h100", {0, 8});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 8;
  o.layout.pipeline_stages = 1;
  const Plan plan = optimize_plan(load_model_for_devices("gpt-tiny", 8, 8), h100, o);
  EXPECT_EQ(plan.summary.memory_verdict, "fits");
  EXPECT_DOUBLE_EQ(plan.summary.memory_margin_bytes, 80 * kGiB - plan.summary.peak_memory_bytes);
  EXPECT_EQ(plan.summary.fewest_devices_for_state, 1);
  EXPECT_GT(plan.summary.model_state_bytes, 0);
}

}  // namespace
}  // namespace unity::memory_verdict_test
