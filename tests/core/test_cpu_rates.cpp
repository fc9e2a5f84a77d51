// Two device figures cpu-local's probe measures (DeviceSpec::gemm_rates and
// transcendental_seconds), by hand on a device the test describes: a product runs at the rate
// measured for its size, interpolated on log FLOPs; an element-wise operator with a
// transcendental function pays for each value beside its bytes. Devices without them (every
// preset) cost as before.
#include <gtest/gtest.h>

#include <cmath>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity {
namespace {

DeviceSpec cpu() {
  DeviceSpec d = testing_machines::ideal_device(20e9, 1e15);  // compute-bound: the FLOPs decide
  d.name = "core";
  d.kind = "cpu";
  return d;
}

TEST(CpuRates, AProductRunsAtTheRateMeasuredForItsSize) {
  DeviceSpec d = cpu();
  d.gemm_rates = {{1e6, 10e9}, {1e8, 30e9}};
  EXPECT_DOUBLE_EQ(gemm_rate(d, 1e5), 10e9);      // below the ladder: its first rate
  EXPECT_DOUBLE_EQ(gemm_rate(d, 1e9), 30e9);      // above: its last
  EXPECT_NEAR(gemm_rate(d, 1e7), 20e9, 1);        // halfway on log FLOPs
  EXPECT_DOUBLE_EQ(gemm_rate(cpu(), 1e7), 20e9);  // none measured: the peak's

  // A 32 x 64 -> 64 Linear: 262,144 FLOP in one product, at 10 GFLOP/s: 26.2144 us.
  Graph g;
  GraphBuilder b(g);
  const NodeId fc = b.linear(b.input("x", {32, 64}), 64, "fc", /*bias=*/false).node;
  const OpTimes t = CostModel(testing_machines::one_device_machine(d)).task_times(g, fc, d);
  EXPECT_NEAR(t.forward, 262144.0 / 10e9, 1e-12);
  const OpTimes peak =
      CostModel(testing_machines::one_device_machine(cpu())).task_times(g, fc, cpu());
  EXPECT_NEAR(peak.forward, 262144.0 / 20e9, 1e-12);
}

// Each pass pays for the values it evaluates: GELU's derivative needs the normal CDF and density
// (an erf and an exp a value), a softmax's backward only the probabilities it kept.
TEST(CpuRates, GeluPaysForEachTranscendentalValue) {
  DeviceSpec d = cpu();
  d.transcendental_seconds = 5e-9;
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.weight("x", {32, 256});
  const NodeId gelu = b.op(OpType::Gelu, {}, {x}, "gelu").node;
  const NodeId relu = b.op(OpType::Relu, {}, {x}, "relu").node;
  const NodeId softmax = b.op(OpType::Softmax, {}, {x}, "softmax").node;
  const CostModel model(testing_machines::one_device_machine(d));
  // 8,192 values at 5 ns: 40.96 us, beside 8,192 FLOP at 20 GFLOP/s (0.41 us); backward two an
  // element: 81.92 us.
  EXPECT_NEAR(model.task_times(g, gelu, d).forward, 8192 * 5e-9 + 8192 / 20e9, 1e-12);
  EXPECT_NEAR(model.task_times(g, gelu, d).backward, 2 * 8192 * 5e-9 + 8192 / 20e9, 1e-12);
  EXPECT_NEAR(model.task_times(g, relu, d).forward, 8192 / 20e9, 1e-12);
  // Softmax: 8 FLOP an element forward with an exp each; twice the FLOPs back, no exp.
  const OpTimes s = model.task_times(g, softmax, d);
  EXPECT_NEAR(s.forward, 8192 * 5e-9 + 8 * 8192 / 20e9, 1e-12);
  EXPECT_NEAR(s.backward, 2 * 8 * 8192 / 20e9, 1e-12);
  // Without the figure (every preset): the element-wise roofline alone.
  EXPECT_NEAR(
      CostModel(testing_machines::one_device_machine(cpu())).task_times(g, gelu, cpu()).forward,
      8192 / 20e9, 1e-12);
}

// Two kinds of transcendental, as the probe measures them: an exp-like value (a sigmoid's, 3 ns)
// and an erf (GELU's, 12 ns). On 8,192 values: a sigmoid's forward 24.58 us beside its 8,192 FLOP
// at 20 GFLOP/s (0.41 us), its backward from its output (y (1 - y)) no transcendental; GELU's
// forward 98.30 us, its backward an erf and an exp a value, 122.88 us; the same tanh and exp as
// the sigmoid, and a log's backward (1 / x) none.
TEST(CpuRates, AnErfCostsItsOwnMeasuredTimeAndDerivativesFromTheOutputNone) {
  DeviceSpec d = cpu();
  d.transcendental_seconds = 3e-9;
  d.erf_seconds = 12e-9;
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.weight("x", {32, 256});
  const CostModel model(testing_machines::one_device_machine(d));
  const double flops = 8192 / 20e9;
  for (const OpType t : {OpType::Sigmoid, OpType::Tanh, OpType::Exp, OpType::Log}) {
    const NodeId id = b.op(t, {}, {x}, std::string(to_string(t))).node;
    const OpTimes s = model.task_times(g, id, d);
    EXPECT_NEAR(s.forward, 8192 * 3e-9 + flops, 1e-12) << to_string(t);
    EXPECT_NEAR(s.backward, flops, 1e-12) << to_string(t);
  }
  const OpTimes gelu = model.task_times(g, b.op(OpType::Gelu, {}, {x}, "gelu").node, d);
  EXPECT_NEAR(gelu.forward, 8192 * 12e-9 + flops, 1e-12);
  EXPECT_NEAR(gelu.backward, 8192 * (12e-9 + 3e-9) + flops, 1e-12);
}

// The optimizer's update at the rate measured for its size: 262,144 fp32 parameters (1 MiB) with
// SGD measured at 0.1 ns a parameter for 64 Ki and 0.5 ns for 4 Mi, interpolated on log
// parameters (256 Ki is a third of the way from 64 Ki to 4 Mi: 0.1 + 0.4 / 3 ns). Beyond the
// largest size, at least the traffic streamed: 16 Mi parameters x 16 bytes (read weight and
// gradient, write weight, clear gradient) at 20 GB/s.
TEST(CpuRates, AnUpdateRunsAtTheRateMeasuredForItsSize) {
  DeviceSpec d = cpu();
  d.memory_bandwidth = 20e9;
  d.update_rates["sgd"] = {{65536, 0.1e-9}, {4194304, 0.5e-9}};
  const CostModel sgd(testing_machines::one_device_machine(d), Optimizer::SGD);
  EXPECT_NEAR(sgd.update_time(262144 * 4.0, d), 262144 * (0.1e-9 + 0.4e-9 / 3), 1e-12);
  EXPECT_NEAR(sgd.update_time(1024 * 4.0, d), 1024 * 0.1e-9, 1e-15);  // below: the first rate
  const double streamed = 16777216 * 16.0 / 20e9;
  EXPECT_NEAR(sgd.update_time(16777216 * 4.0, d), streamed, 1e-12);
  // Another optimizer, not measured: its traffic streamed (Adam: 8 x 4 bytes a parameter).
  const CostModel adam(testing_machines::one_device_machine(d), Optimizer::Adam);
  EXPECT_NEAR(adam.update_time(262144 * 4.0, d), 262144 * 32.0 / 20e9, 1e-12);
}

TEST(CpuRates, MachineFilesKeepTheMeasuredFigures) {
  DeviceSpec d = cpu();
  d.gemm_rates = {{1e6, 10e9}, {1e8, 30e9}};
  d.transcendental_seconds = 5e-9;
  d.update_rates["adam"] = {{65536, 1.7e-9}, {2097152, 1.8e-9}};
  MachineSpec m = testing_machines::one_device_machine(d);
  m.intra_island = m.inter_island = m.inter_node = {"link", 1e9, 1e-6};
  const DeviceSpec back = machine_from_json(machine_to_json(m)).device_types.at(0);
  EXPECT_EQ(back.gemm_rates, d.gemm_rates);
  EXPECT_DOUBLE_EQ(back.transcendental_seconds, 5e-9);
  EXPECT_EQ(back.update_rates, d.update_rates);
  nlohmann::json bad = machine_to_json(m);
  bad["device_types"][0]["update_rates"] = {{"lamb", {{1.0, 1e-9}}}};
  try {
    machine_from_json(bad);
    ADD_FAILURE() << "an unknown optimizer was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown optimizer 'lamb'"), std::string::npos)
        << e.what();
  }
  nlohmann::json j = machine_to_json(m);
  j["device_types"][0]["gemm_rates"] = {{1e6, -1.0}};
  EXPECT_THROW(machine_from_json(j), InputError);
  EXPECT_TRUE(load_machine("cpu-local").device_types.at(0).gemm_rates.empty());
}

}  // namespace
}  // namespace unity
