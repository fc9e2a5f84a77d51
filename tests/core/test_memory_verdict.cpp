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

TEST(MemoryVerdict, EveryPlanCarriesIt) {
  const MachineSpec h100 = load_machine("dgx-h100", {0, 8});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 8;
  o.layout.pipeline_stages = 1;
  const Plan plan = optimize_plan(load_model_for_devices("gpt-tiny", 8, 8), h100, o);
  EXPECT_EQ(plan.summary.memory_verdict, "fits");
  EXPECT_DOUBLE_EQ(plan.summary.memory_margin_bytes, 80 * kGiB - plan.summary.peak_memory_bytes);
}

}  // namespace
}  // namespace unity::memory_verdict_test
