// Every rule file the product ships (rules/*.json, compiled in as the default set, and
// rules/generated/*.json) is verified: an unverified rule cannot ship.
#include <gtest/gtest.h>

#include <filesystem>

#include "unity/core/rule.h"
#include "unity/rules/verifier.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> shipped_rule_files() {
  std::vector<fs::path> files;
  const fs::path root = fs::path(UNITY_SOURCE_DIR) / "rules";
  for (const auto& dir : {root, root / "generated"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(ShippedRules, EveryRuleFileIsVerified) {
  const auto files = shipped_rule_files();
  ASSERT_FALSE(files.empty());
  unity::RuleSet all;
  for (const auto& f : files)
    for (auto& r : unity::load_rule_file(f).rules) all.rules.push_back(std::move(r));
  unity::rules::VerifyOptions o;
  o.concrete_trials = 150;
  o.concrete_enough = 6;
  const auto report = unity::rules::verify_rules(all, o);
  for (const auto& r : report.rules)
    EXPECT_TRUE(r.ok()) << r.rule << ": " << to_string(r.verdict) << ": " << r.detail;
  std::printf("%zu rules in %zu files: %d verified, %d verified for degrees up to %d (%.1f s)\n",
              report.rules.size(), files.size(), report.verified, report.bounded, o.degree_bound, report.seconds);
}
