// Measured op times from a project override the analytic cost model, for exactly the tasks that
// were measured (same op, attributes, piece shapes and device type).
#include <gtest/gtest.h>

#include "project_test_util.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/projects/op_profiles.h"
#include "unity/projects/project.h"

using namespace unity;
using namespace unity::projects;
using namespace unity::projects::testing;

namespace {

std::vector<NodeId> nodes_of(const Graph& g, OpType type) {
  std::vector<NodeId> out;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == type) out.push_back(id);
  return out;
}

}  // namespace

TEST(OpProfileKey, NamesOpAttributesAndPieceShapesButNotNodeNames) {
  Graph g;
  GraphBuilder b(g);
  const auto x = b.input("x", {64, 784});
  const auto h1 = b.linear(x, 784, "first", /*bias=*/false);
  b.linear(h1, 784, "second", /*bias=*/false);
  b.linear(h1, 784, "third", /*bias=*/false);  // the second's op on the same shapes
  b.linear(h1, 512, "narrower", /*bias=*/false);
  const auto linears = nodes_of(g, OpType::Linear);
  ASSERT_EQ(linears.size(), 4u);
  const std::string first = op_profile_key(g, linears[0]);
  const std::string second = op_profile_key(g, linears[1]);
  EXPECT_NE(first, second);  // the first computes no gradient of its input
  EXPECT_EQ(second, op_profile_key(g, linears[2]));
  EXPECT_NE(second, op_profile_key(g, linears[3]));
  EXPECT_EQ(first.rfind("Linear(", 0), 0u) << first;
  EXPECT_NE(first.find("float32[64,784] float32[784,784]+grad -> float32[64,784]"),
            std::string::npos)
      << first;
  EXPECT_NE(second.find("float32[64,784]+grad float32[784,784]+grad"), std::string::npos) << second;

  // A task of the data-parallel graph works on a piece: half the batch on 2 devices.
  const Graph dp = make_data_parallel(g, 2);
  const std::string piece = op_profile_key(dp, nodes_of(dp, OpType::Linear).at(0));
  EXPECT_NE(piece.find("float32[32,784]"), std::string::npos) << piece;
  EXPECT_NE(piece, first);
}

TEST(ProjectProfileSource, OverridesExactlyTheMeasuredTasks) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec machine = load_machine("summit", {0, 1});
  const Graph g = zoo::build("mnist-mlp", 64);
  const auto linears = nodes_of(g, OpType::Linear);
  ASSERT_EQ(linears.size(), 2u);
  const DeviceSpec& device = machine.device(0);
  project.put_op_profiles(
      {{device.name, op_profile_key(g, linears[0]), 0.125, 0.25, "test", ""},
       {"Some Other GPU", op_profile_key(g, linears[1]), 1.0, 1.0, "test", ""}});

  const auto profiles = ProjectProfileSource::load(project);
  EXPECT_EQ(profiles->size(), 2u);
  const CostModel analytic(machine);
  const CostModel measured(machine, Optimizer::SGD, profiles);
  const OpTimes t0 = measured.task_times(g, linears[0], device);
  EXPECT_EQ(t0.forward, 0.125);
  EXPECT_EQ(t0.backward, 0.25);
  // Measured on another device type only: the analytic time stays.
  const OpTimes t1 = measured.task_times(g, linears[1], device);
  const OpTimes a1 = analytic.task_times(g, linears[1], device);
  EXPECT_EQ(t1.forward, a1.forward);
  EXPECT_EQ(t1.backward, a1.backward);
  for (const auto& [id, n] : g.nodes()) {
    if (id == linears[0]) continue;
    EXPECT_EQ(measured.task_times(g, id, device).forward,
              analytic.task_times(g, id, device).forward);
  }
}

TEST(ProjectProfileSource, OptimizeUsesTheProjectsMeasuredTimes) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec machine = load_machine("summit", {0, 2});
  const Graph model = load_model_for_devices("mnist-mlp", 2);
  const Plan analytic = optimize_plan(model, machine, {});
  // Measure every Linear task of the plan at 10 ms forward, 20 ms backward.
  std::vector<OpProfile> profiles;
  for (const auto id : nodes_of(analytic.pcg, OpType::Linear))
    profiles.push_back(
        {machine.device(0).name, op_profile_key(analytic.pcg, id), 0.010, 0.020, "test", ""});
  project.put_op_profiles(profiles);
  OptimizeOptions options;
  options.profiles = ProjectProfileSource::load(project);
  const Plan measured = optimize_plan(model, machine, options);
  // Two Linear layers one after the other, each 10 + 20 ms on every device, replace what the
  // roofline said they cost.
  const double linear_analytic_ms = [&] {
    const CostModel costs(machine);
    double ms = 0;
    for (const auto id : nodes_of(analytic.pcg, OpType::Linear)) {
      const auto t = costs.task_times(analytic.pcg, id, machine.device(0));
      ms += (t.forward + t.backward) * 1e3;
    }
    return ms;
  }();
  EXPECT_NEAR(measured.summary.compute_ms - analytic.summary.compute_ms, 60.0 - linear_analytic_ms,
              1e-6);
}
