// `optimize --mode data-parallel`: exact communication volumes, memory verdicts, plan files.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

Plan data_parallel(const std::string& model, const std::string& machine, MachineSelection sel) {
  const MachineSpec m = load_machine(machine, sel);
  return optimize_plan(load_model_for_devices(model, m.num_devices()), m, {});
}

}  // namespace

TEST(DataParallel, InsertsPartitionsAndReplicas) {
  const Graph serial = zoo::build("mnist-mlp", 128);
  const Graph dp = make_data_parallel(serial, 2);
  EXPECT_EQ(dp.count(OpType::Partition), 2);  // pixels and labels
  EXPECT_EQ(dp.count(OpType::Replicate), 2);  // the two weights
  for (const auto& [id, n] : dp.nodes())
    if (n.op.type == OpType::Linear) {
      EXPECT_EQ(n.outputs[0].dims[0].degree, 2);
    }
  EXPECT_THROW(make_data_parallel(zoo::build("mnist-mlp", 64), 3), InputError);
}

TEST(DataParallel, MnistMlpSendsExactlyTheWeightGradients) {
  // Paper section 1: 2 * (ci*h + h*co) = 813,056 elements of 4 bytes per iteration on 2 GPUs.
  for (const std::string machine : {"summit", "dgx-a100", "pcie-4gpu"}) {
    const Plan plan = data_parallel("mnist-mlp", machine, {0, 2});
    EXPECT_EQ(plan.summary.devices, 2);
    EXPECT_DOUBLE_EQ(plan.summary.communication_bytes, 3'252'224.0) << machine;
    EXPECT_GT(plan.summary.communication_ms, 0);
    EXPECT_GT(plan.summary.compute_ms, 0);
    EXPECT_TRUE(plan.summary.fits_in_memory);
  }
  // On one device nothing is sent.
  EXPECT_DOUBLE_EQ(data_parallel("mnist-mlp", "summit", {0, 1}).summary.communication_bytes, 0.0);
}

TEST(DataParallel, CommunicationGrowsWithTheRing) {
  // Ring all-reduce: each of k devices sends 2(k-1)/k of the gradients.
  const double w = 406'528.0 * 4;
  const Plan six = data_parallel("mnist-mlp", "summit", {1, 0});
  EXPECT_DOUBLE_EQ(six.summary.communication_bytes, 2.0 * 5 * w);
  const Plan twelve = data_parallel("mnist-mlp", "summit", {2, 0});
  EXPECT_DOUBLE_EQ(twelve.summary.communication_bytes, 2.0 * 11 * w);
  // Crossing nodes puts InfiniBand in the ring: slower than one node's NVLink/X-Bus.
  EXPECT_GT(twelve.summary.communication_ms, six.summary.communication_ms);
}

TEST(DataParallel, DlrmAndCandleUnoDoNotFitOneV100) {
  for (const std::string model : {"dlrm", "candle-uno"}) {
    const Plan plan = data_parallel(model, "summit", {});
    EXPECT_FALSE(plan.summary.fits_in_memory) << model;
    EXPECT_GT(plan.summary.peak_memory_bytes, 16.0 * (1 << 30)) << model;
  }
  EXPECT_TRUE(data_parallel("resnext50", "summit", {}).summary.fits_in_memory);
}

TEST(DataParallel, EveryZooModelOnEveryPreset) {
  for (const auto& info : zoo::models()) {
    for (const auto& machine : machine_preset_names()) {
      SCOPED_TRACE(info.name + " on " + machine);
      const Plan plan = data_parallel(info.name, machine, {});
      EXPECT_GT(plan.summary.iteration_time_ms, 0);
      EXPECT_EQ(plan.mapping.views.size(), plan.mapping.per_op.size());
      EXPECT_NO_THROW(plan.pcg.validate());
      for (const auto& [id, view] : plan.mapping.views)
        for (int d : view.devices()) EXPECT_LT(d, plan.summary.devices);
    }
  }
}

TEST(Plan, JsonRoundTrip) {
  const Plan plan = data_parallel("mnist-mlp", "summit", {0, 2});
  const auto j = plan_to_json(plan);
  const Plan back = plan_from_json(j);
  EXPECT_EQ(back.pcg.structural_hash(), plan.pcg.structural_hash());
  EXPECT_EQ(back.mapping.views, plan.mapping.views);
  EXPECT_DOUBLE_EQ(back.summary.communication_bytes, plan.summary.communication_bytes);
  auto bad = j;
  bad["operators"][0]["view"]["start"] = 99;
  EXPECT_THROW(plan_from_json(bad), InputError);
}
