// Measured operator profiles (the cost model's ProfileSource): signatures, measurement, the file,
// and the prediction that uses them.
#include <gtest/gtest.h>

#include <filesystem>

#include "executor_test_support.h"
#include "unity/core/cost/op_profile_key.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/executor/calibration.h"
#include "unity/executor/op_profiles.h"

using namespace unity;
using namespace unity::executor;
using namespace unity::executor::testing;

namespace {

NodeId find(const Graph& g, const std::string& name) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.name == name) return id;
  return -1;
}

}  // namespace

TEST(OpProfiles, SignaturesSeparateWorkNotNames) {
  const Graph a = make_data_parallel(zoo::build("mnist-mlp", 64), 2);
  const Graph b = make_data_parallel(zoo::build("mnist-mlp", 64), 2);
  EXPECT_EQ(op_profile_key(a, find(a, "fc1")), op_profile_key(b, find(b, "fc1")));
  // fc1 reads the image (no gradient), fc2 reads an activation (a gradient): different backward
  // work.
  const std::string fc1 = op_profile_key(a, find(a, "fc1"));
  EXPECT_NE(fc1.find(" float32[32,784] "), std::string::npos) << fc1;
  EXPECT_NE(op_profile_key(a, find(a, "fc2")).find(" float32[32,512]+grad "), std::string::npos);
  // A different batch is different work.
  const Graph c = make_data_parallel(zoo::build("mnist-mlp", 128), 2);
  EXPECT_NE(op_profile_key(c, find(c, "fc1")), fc1);
}

TEST(OpProfiles, MeasuringALinearGivesPositiveTimesAndSourcesAreRefused) {
  const Graph g = zoo::build("mnist-mlp", 64);
  const OpTimes fc1 = measure_operator(g, find(g, "fc1"), 0.02);
  EXPECT_GT(fc1.forward, 0);
  EXPECT_GT(fc1.backward, 0);
  EXPECT_THROW(measure_operator(g, find(g, "image"), 0.02), InputError);
}

TEST(OpProfiles, LookupMeasuresOnceScalesAndRoundTripsThroughTheFile) {
  const Graph g = zoo::build("mnist-mlp", 64);
  MeasuredProfiles p(2.0);
  const DeviceSpec cpu;
  const auto first = p.lookup(g, find(g, "fc2"), cpu);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(p.measured_now(), 1u);
  const auto again = p.lookup(g, find(g, "fc2"), cpu);
  EXPECT_EQ(p.measured_now(), 1u);  // cached
  EXPECT_DOUBLE_EQ(again->forward, first->forward);
  EXPECT_FALSE(p.lookup(g, find(g, "label"), cpu).has_value());  // sources are not operators
  const auto file = std::filesystem::temp_directory_path() / "unity-test-profiles.json";
  p.save(file);
  const auto loaded = MeasuredProfiles::load(file);
  EXPECT_DOUBLE_EQ(loaded->slowdown(), 2.0);
  const auto cached = loaded->lookup(g, find(g, "fc2"), cpu);
  EXPECT_EQ(loaded->measured_now(), 0u);
  EXPECT_DOUBLE_EQ(cached->forward, first->forward);
  std::filesystem::remove(file);
  EXPECT_EQ(profiles_path_for("/x/cal-2.json"), std::filesystem::path("/x/cal-2.profiles.json"));
}

TEST(OpProfiles, PredictionUsesTheProfilesForComputeAndTheMachineForTheRest) {
  const Graph pcg = make_data_parallel(zoo::build("mnist-mlp", 64), 2);
  const auto views = mapped_views(pcg, 2);
  const MachineSpec m = load_machine("cpu-local", {0, 2});
  auto p = std::make_shared<MeasuredProfiles>(1.0);
  const double analytic = predicted_iteration_ms(pcg, views, m, "sgd", nullptr);
  const double measured = predicted_iteration_ms(pcg, views, m, "sgd", p);
  EXPECT_GT(analytic, 0);
  EXPECT_GT(measured, 0);
  EXPECT_NE(analytic, measured);
  EXPECT_EQ(p->size(), 4u);  // fc1, relu1, fc2, loss
}

TEST(OpProfiles, CalibrationSlowdownIsTheSoloOverConcurrentRate) {
  Calibration c;
  c.gemm_flops = 20e9;
  c.solo_gemm_flops = 50e9;
  EXPECT_DOUBLE_EQ(c.slowdown(), 2.5);
  c.solo_gemm_flops = 10e9;  // noise: never below 1
  EXPECT_DOUBLE_EQ(c.slowdown(), 1.0);
}
