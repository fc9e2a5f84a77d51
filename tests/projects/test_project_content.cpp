// What a project stores: models, machines, plans, runs with metrics, op profiles, pins and vetoes,
// each read back equal to what was written.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "project_test_util.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/projects/project.h"
#include "unity/projects/records_json.h"

using namespace unity;
using namespace unity::projects;
using namespace unity::projects::testing;

TEST(ProjectContent, ModelsAreStoredOnceAndLoadBackEqual) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const Graph mlp = zoo::build("mnist-mlp", 64);
  const Graph bigger = zoo::build("mnist-mlp", 128);  // same name, other structure
  const auto a = project.add_model(mlp, "mnist-mlp");
  EXPECT_EQ(project.add_model(mlp, "mnist-mlp"), a);
  const auto b = project.add_model(bigger, "mnist-mlp");
  EXPECT_NE(a, b);
  const auto models = project.models();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "mnist-mlp");
  EXPECT_EQ(models[0].source, "mnist-mlp");
  EXPECT_EQ(models[0].structural_hash, fmt::format("{:016x}", mlp.structural_hash()));
  const Graph loaded = project.load_model(a);
  EXPECT_EQ(loaded.structural_hash(), mlp.structural_hash());
  EXPECT_EQ(graph_to_json(loaded), graph_to_json(mlp));
  EXPECT_THROW(project.load_model(999), InputError);
}

TEST(ProjectContent, MachinesAreStoredOnceAndLoadBackEqual) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec summit = load_machine("summit", {2, 0});
  const MachineSpec one_gpu = load_machine("summit", {0, 1});
  const auto a = project.add_machine(summit);
  EXPECT_EQ(project.add_machine(summit), a);
  EXPECT_NE(project.add_machine(one_gpu), a);
  const auto machines = project.machines();
  ASSERT_EQ(machines.size(), 2u);
  EXPECT_EQ(machines[0].devices, 12);
  EXPECT_EQ(machines[1].devices, 1);
  EXPECT_EQ(machine_to_json(project.load_machine(a)), machine_to_json(summit));
}

TEST(ProjectContent, PlansLoadBackEqualAndAreFoundByContent) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec machine = load_machine("summit", {0, 2});
  const Plan plan = optimize_plan(load_model_for_devices("mnist-mlp", 2), machine, {});
  EXPECT_FALSE(project.find_plan(plan));
  const auto id = project.add_plan(plan);
  EXPECT_EQ(project.find_plan(plan), id);
  EXPECT_THROW(project.add_plan(plan, 12345), InputError);  // no such search
  const auto plans = project.plans();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].model, "mnist-mlp");
  EXPECT_EQ(plans[0].devices, 2);
  EXPECT_EQ(plans[0].mode, "data-parallel");
  EXPECT_DOUBLE_EQ(plans[0].iteration_time_ms, plan.summary.iteration_time_ms);
  EXPECT_FALSE(plans[0].search_id);
  EXPECT_EQ(plans[0].summary, summary_to_json(plan.summary));
  // As lossless as a plan file: what comes back equals the plan read from its own JSON.
  const Plan as_file = plan_from_json(plan_to_json(plan));
  EXPECT_EQ(plan_to_json(project.load_plan(id)), plan_to_json(as_file));
  EXPECT_EQ(project.find_plan(as_file), id);  // `unity run plan.json` finds the stored plan
  OptimizeOptions adam;
  adam.optimizer = "adam";
  const Plan other = optimize_plan(load_model_for_devices("mnist-mlp", 2), machine, adam);
  EXPECT_FALSE(project.find_plan(other));
}

TEST(ProjectContent, RunsKeepTheirMetricsAndResult) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec machine = load_machine("cpu-local", {0, 2});
  const auto plan_id =
      project.add_plan(optimize_plan(load_model_for_devices("mnist-mlp", 2), machine, {}));
  const auto run = project.begin_run(plan_id, "cpu", 2, {{"iterations", 3}});
  EXPECT_EQ(project.runs().at(0).status, "running");  // this process is alive
  project.add_run_metrics(run, {{0, 12.5, 2.30}, {1, 11.0, 2.10}});
  project.add_run_metrics(run, {{1, 10.5, 2.05}, {2, 10.0, std::nullopt}});  // replaces iteration 1
  project.finish_run(run, Status::Completed, {{"measured_iteration_ms", 10.5}});
  const auto metrics = project.run_metrics(run);
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_DOUBLE_EQ(metrics[1].time_ms, 10.5);
  EXPECT_DOUBLE_EQ(*metrics[1].loss, 2.05);
  EXPECT_FALSE(metrics[2].loss);
  const auto r = project.runs().at(0);
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.config["iterations"], 3);
  EXPECT_EQ(r.result["measured_iteration_ms"], 10.5);
  EXPECT_FALSE(r.finished_at.empty());

  EXPECT_THROW(project.begin_run(999, "cpu", 2), InputError);
  EXPECT_THROW(project.add_run_metrics(run, {{3, -1.0, std::nullopt}}), InputError);
  EXPECT_THROW(project.add_run_metrics(run, {{3, NAN, std::nullopt}}), InputError);
  EXPECT_THROW(project.finish_run(run, Status::Running, {}), InputError);
  EXPECT_FALSE(status_from_string("exploded").has_value());
  EXPECT_EQ(status_from_string(to_string(Status::Interrupted)), Status::Interrupted);
  EXPECT_EQ(project.run_metrics(run).size(), 3u);  // a refused batch writes nothing
}

TEST(ProjectContent, OpProfilesAreReplacedPerDeviceAndKey) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  project.put_op_profiles(
      {{"V100", "Relu() float32[8] -> float32[8]", 1e-6, 1e-6, "calibrate", ""},
       {"A100", "Relu() float32[8] -> float32[8]", 5e-7, 5e-7, "calibrate", ""}});
  project.put_op_profiles({{"V100", "Relu() float32[8] -> float32[8]", 2e-6, 3e-6, "run 4", ""}});
  const auto profiles = project.op_profiles();
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[1].device, "V100");
  EXPECT_DOUBLE_EQ(profiles[1].forward_s, 2e-6);
  EXPECT_DOUBLE_EQ(profiles[1].backward_s, 3e-6);
  EXPECT_EQ(profiles[1].source, "run 4");
  EXPECT_FALSE(profiles[1].measured_at.empty());
  // One bad profile refuses the whole batch.
  EXPECT_THROW(project.put_op_profiles({{"V100", "Add() -> ", 1e-6, 1e-6, "x", ""},
                                        {"V100", "Relu()", -1.0, 0.0, "x", ""}}),
               InputError);
  EXPECT_EQ(project.op_profiles().size(), 2u);
}

TEST(ProjectContent, PinsAndVetoesReplaceAndFilterByModel) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const auto model = project.add_model(zoo::build("mnist-mlp", 64), "mnist-mlp");
  const auto other = project.add_model(zoo::build("mlp", 256), "mlp");
  project.set_pin_veto(std::nullopt, "fuse_linear_relu", nullptr, RuleChoice::Veto);
  project.set_pin_veto(model, "partition_linear", {{"node", "fc1"}}, RuleChoice::Pin);
  project.set_pin_veto(model, "partition_linear", {{"node", "fc1"}}, RuleChoice::Veto);  // replaces
  project.set_pin_veto(other, "replicate_linear", nullptr, RuleChoice::Pin);
  EXPECT_EQ(project.pins_vetoes().size(), 3u);
  const auto mine = project.pins_vetoes(model);
  ASSERT_EQ(mine.size(), 2u);  // its own and the global one
  EXPECT_EQ(mine[0].rule, "fuse_linear_relu");
  EXPECT_FALSE(mine[0].model_id);
  EXPECT_EQ(mine[1].state, RuleChoice::Veto);
  EXPECT_EQ(mine[1].match["node"], "fc1");
  project.clear_pin_veto(model, "partition_linear", {{"node", "fc1"}});
  EXPECT_EQ(project.pins_vetoes(model).size(), 1u);
  EXPECT_THROW(project.set_pin_veto(4242, "x", nullptr, RuleChoice::Pin), InputError);
  EXPECT_THROW(project.set_pin_veto(model, "x", {{"nodes", {1, 2}}}, RuleChoice::Pin), InputError);
  EXPECT_EQ(project.counts().pins_vetoes, 2);
}

TEST(ProjectContent, CountsAndJsonOfAllRows) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  project.add_model(zoo::build("mnist-mlp", 64), "mnist-mlp");
  project.add_machine(load_machine("summit"));
  const auto c = project.counts();
  EXPECT_EQ(c.models, 1);
  EXPECT_EQ(c.machines, 1);
  EXPECT_EQ(c.searches, 0);
  const auto j = to_json(c);
  EXPECT_EQ(j["models"], 1);
  EXPECT_EQ(j["machines"], 1);
  EXPECT_EQ(to_json(project.models().at(0))["source"], "mnist-mlp");
}
