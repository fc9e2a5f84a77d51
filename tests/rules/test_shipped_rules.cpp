// Every rule file the product ships (rules/*.json, compiled in as the default set, and
// rules/generated/*.json) is verified: an unverified rule cannot ship.
#include <gtest/gtest.h>

#include <filesystem>

#include "../hand_written_rules.h"
#include "unity/core/rules/rule.h"
#include "unity/rules/verifier.h"

namespace fs = std::filesystem;

namespace {

void expect_verified(const std::vector<std::string>& files, unity::rules::VerifyOptions o) {
  unity::RuleSet all;
  for (const auto& f : files)
    for (auto& r : unity::load_rule_file(f).rules) all.rules.push_back(std::move(r));
  ASSERT_FALSE(all.rules.empty()) << "no rules in the shipped files";
  const auto report = unity::rules::verify_rules(all, o);
  // A rule's "verified" field is what the matcher trusts: verify_rules fails a rule whose proof
  // covers less than the field claims.
  for (const auto& r : report.rules)
    EXPECT_TRUE(r.ok()) << r.rule << ": " << to_string(r.verdict) << ": " << r.detail;
  EXPECT_TRUE(report.all_ok());
  std::printf("%zu rules in %zu files: %d verified, %d verified for degrees up to %d (%.1f s)\n",
              report.rules.size(), files.size(), report.verified, report.bounded, o.degree_bound,
              report.seconds);
  for (const auto& [scope, count] : report.by_scope)
    std::printf("  proved for %s: %d\n", scope.c_str(), count);
}

const fs::path kRules = fs::path(UNITY_SOURCE_DIR) / "rules";

}  // namespace

TEST(ShippedRules, HandWrittenRuleFilesAreVerified) {
  const auto files = rule_files_in(kRules);
  ASSERT_FALSE(files.empty());
  expect_verified(files, {});  // verify's default trial counts
}

// The generated file holds about 1,750 rules: about 6 minutes on two idle cores. Z3's limit is a
// resource count, with no clock beside it, and each thread takes a fixed share of the rules, so
// the verdicts do not depend on the machine's speed or load (a 60 s clock made one rule's proof
// depend on CI's load). The concrete stage keeps `verify`'s defaults: with fewer instances a rule
// whose target is undefined only for a rare input layout can pass.
TEST(ShippedRules, GeneratedRuleFilesAreVerified) {
  const auto files = rule_files_in(kRules / "generated");
  if (files.empty()) GTEST_SKIP() << "no rules/generated/*.json";
  expect_verified(files, {});
}

// The built-in set is the verified union: every rule of rules/*.json, then of
// rules/generated/*.json, in file order, each name once.
TEST(ShippedRules, BuiltInSetIsTheUnionOfTheShippedFiles) {
  std::vector<std::string> expected;
  for (const auto& dir : {kRules, kRules / "generated"})
    for (const auto& f : rule_files_in(dir))
      for (const auto& r : unity::load_rule_file(f).rules) expected.push_back(r.name);
  std::vector<std::string> builtin;
  for (const auto& r : unity::default_rules().rules) builtin.push_back(r.name);
  EXPECT_EQ(builtin, expected);
  std::sort(builtin.begin(), builtin.end());
  EXPECT_EQ(std::adjacent_find(builtin.begin(), builtin.end()), builtin.end())
      << "a rule name appears twice";
  EXPECT_GT(builtin.size(), 1000u);
}
