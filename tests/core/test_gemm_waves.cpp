// GEMMs by shape (cost_model.h, gemm_wave_efficiency): output tiles run in waves over the SMs, and
// a last wave that leaves SMs idle costs a whole one. Figures by hand.
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity::gemm_waves_test {
namespace {

TEST(GemmWaves, QuantizedByHand) {
  // 4,096 x 4,096 on 132 SMs: 512 tiles of 128 x 256 (or 1,024 of 128 x 128), 4 (8) waves.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(4096, 4096, 1, 132), 512.0 / 528);
  // 2,048 x 2,048 on 108 SMs: 128 large tiles need 2 waves (0.593); 256 of 128 x 128 need 3.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(2048, 2048, 1, 108), 256.0 / 324);
  // A product that fills the SMs exactly: 132 tiles of 128 x 256.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(128 * 12, 256 * 11, 1, 132), 1.0);
  // A small product: one wave of six 128 x 128 tiles (the last row of tiles 44 rows full) on
  // 132 SMs, most of them idle.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(300, 256, 1, 132), 300.0 * 256 / (132 * 128 * 128));
  // A batch of small products shares the waves.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(128, 128, 132, 132), 1.0);
  // No SM count: no quantization.
  EXPECT_DOUBLE_EQ(gemm_wave_efficiency(100, 100, 1, 0), 1.0);
}

TEST(GemmWaves, ALinearPaysForItsLastWave) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {2048, 2048});
  TensorRef y = b.linear(x, 2048, "fc", false);
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e15);  // compute-bound
  d.compute_efficiency = 0.5;
  MachineSpec m = testing_machines::one_device_machine(d);
  const CostModel flat(m);
  const double flops = 2.0 * 2048 * 2048 * 2048;
  EXPECT_NEAR(flat.task_times(g, y.node, d).forward, flops / 0.5e12, 1e-12);
  d.sm_count = 108;
  m.device_types = {d};
  const CostModel waves(m);
  EXPECT_NEAR(waves.task_times(g, y.node, d).forward, flops / 0.5e12 * 324 / 256, 1e-12);
}

}  // namespace
}  // namespace unity::gemm_waves_test
