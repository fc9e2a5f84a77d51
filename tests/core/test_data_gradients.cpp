// DeviceSpec::skips_data_gradients: on a device whose executor computes an operand's gradient only
// where the operand needs one (Unity's own, which cpu-local's measured figures describe), a first
// layer's backward is its weight gradient alone: one product, half a hidden layer's two. By hand,
// a 64 x 784 x 512 Linear at 10 GFLOP/s: 51.38 MFLOP, 5.138 ms forward; backward 5.138 ms for the
// first layer, 10.276 ms for the one after it; without the field both are 10.276 ms.
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity {
namespace {

struct TwoLayers {
  Graph g;
  NodeId first = 0, second = 0;
};

TwoLayers two_layers() {
  TwoLayers t;
  GraphBuilder b(t.g);
  TensorRef x = b.input("x", {64, 784});
  TensorRef h = b.linear(x, 512, "fc1", /*bias=*/false);
  t.first = h.node;
  t.second = b.linear(h, 784, "fc2", /*bias=*/false).node;
  return t;
}

DeviceSpec cpu(bool skips) {
  DeviceSpec d = testing_machines::ideal_device(10e9, 1e12);  // compute-bound: the FLOPs decide
  d.name = "core";
  d.kind = "cpu";
  d.skips_data_gradients = skips;
  return d;
}

TEST(DataGradients, AFirstLayersBackwardIsItsWeightGradientAlone) {
  const TwoLayers t = two_layers();
  const DeviceSpec d = cpu(true);
  const CostModel model(testing_machines::one_device_machine(d));
  const OpTimes first = model.task_times(t.g, t.first, d);
  const OpTimes second = model.task_times(t.g, t.second, d);
  const double forward = 2.0 * 64 * 784 * 512 / 10e9;
  EXPECT_NEAR(first.forward, forward, 1e-12);
  EXPECT_NEAR(first.backward, forward, 1e-12);              // dW only: x is the data
  EXPECT_NEAR(second.backward, 2 * second.forward, 1e-12);  // dW and dx
}

TEST(DataGradients, WithoutTheFieldEveryProductsBackwardIsTwoProducts) {
  const TwoLayers t = two_layers();
  const DeviceSpec d = cpu(false);
  const CostModel model(testing_machines::one_device_machine(d));
  const OpTimes first = model.task_times(t.g, t.first, d);
  EXPECT_NEAR(first.backward, 2 * first.forward, 1e-12);
}

// A machine file keeps the field (calibrated machines are written and read back); absent, it is
// off, as in every preset.
TEST(DataGradients, MachineFilesKeepTheField) {
  MachineSpec m = testing_machines::one_device_machine(cpu(true));
  m.intra_island = m.inter_island = m.inter_node = {"link", 1e9, 1e-6};
  EXPECT_TRUE(machine_from_json(machine_to_json(m)).device_types.at(0).skips_data_gradients);
  nlohmann::json j = machine_to_json(m);
  j["device_types"][0].erase("skips_data_gradients");
  EXPECT_FALSE(machine_from_json(j).device_types.at(0).skips_data_gradients);
  EXPECT_FALSE(load_machine("cpu-local").device_types.at(0).skips_data_gradients);
}

}  // namespace
}  // namespace unity
