// The generated rules are useful to the search, not only numerous (issue 5's acceptance): on every
// zoo model, the joint search with the generated set alone finds a plan at least as fast as with
// the hand-written set, and the built-in set (their union) one at least as fast as either. The
// search's own plans: no baseline is costed beside them.
#include <gtest/gtest.h>

#include <filesystem>

#include "../hand_written_rules.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/rules/rule.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;
namespace fs = std::filesystem;

namespace {

const fs::path kGenerated =
    fs::path(UNITY_SOURCE_DIR) / "rules" / "generated" / "unity-generated.json";

double joint_ms(const std::string& model, std::vector<std::string> rule_files) {
  const MachineSpec machine = load_machine("summit", {1, 0});
  OptimizeOptions o;
  o.mode = "joint";
  o.baselines = false;  // the search's own plan: what the rule set gives it
  o.rule_files = std::move(rule_files);
  return optimize_plan(load_model_for_devices(model, machine.num_devices()), machine, o)
      .summary.iteration_time_ms;
}

class RuleSetsOnZoo : public ::testing::TestWithParam<std::string> {};

std::string name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (auto& c : s)
    if (c == '-') c = '_';
  return s;
}

}  // namespace

TEST_P(RuleSetsOnZoo, GeneratedSetPlansAtLeastAsFastAsHandWrittenOnOneSummitNode) {
  const double hand = joint_ms(GetParam(), hand_written_rule_files());
  const double generated = joint_ms(GetParam(), {kGenerated.string()});
  const double builtin = joint_ms(GetParam(), {});
  std::printf("%s: hand-written %.3f ms, generated %.3f ms, built-in %.3f ms\n", GetParam().c_str(),
              hand, generated, builtin);
  EXPECT_LE(generated, hand * (1 + 1e-9));
  EXPECT_LE(builtin, hand * (1 + 1e-9));
  EXPECT_LE(builtin, generated * (1 + 1e-9));
}

INSTANTIATE_TEST_SUITE_P(Zoo, RuleSetsOnZoo,
                         ::testing::Values("mnist-mlp", "mlp", "resnext50", "inception-v3",
                                           "bert-large", "dlrm", "xdl", "candle-uno"),
                         name);

TEST(RuleSetsOnZoo, CoversEveryZooModel) {
  std::vector<std::string> tested = {"mnist-mlp",  "mlp",  "resnext50", "inception-v3",
                                     "bert-large", "dlrm", "xdl",       "candle-uno"};
  std::vector<std::string> zoo;
  for (const auto& m : zoo::models())
    if (m.family.empty()) zoo.push_back(m.name);  // the paper's models, not the decoder families
  std::sort(tested.begin(), tested.end());
  std::sort(zoo.begin(), zoo.end());
  EXPECT_EQ(tested, zoo);
}
