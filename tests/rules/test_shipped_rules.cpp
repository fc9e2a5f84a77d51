// Every rule file the product ships (rules/*.json, compiled in as the default set, and
// rules/generated/*.json) is verified: an unverified rule cannot ship.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "../hand_written_rules.h"
#include "unity/core/rules/rule.h"
#include "unity/rules/verdict_check.h"

namespace fs = std::filesystem;

namespace {

// How many generated rules with a current kept verdict the test command proves again, beside every
// rule whose kept verdict is not current: UNITY_RULES_SAMPLE=N for another number, "all" for a
// proof of every rule (what `unity rules verify rules/generated/*.json` does).
constexpr std::size_t kGeneratedSample = 48;

void expect_verified(const std::vector<std::string>& files, unity::rules::VerdictCheckOptions o) {
  if (const char* env = std::getenv("UNITY_RULES_SAMPLE")) {
    if (std::string(env) == "all")
      o.prove_all = true;
    else
      o.sample = std::stoul(env);
  }
  const auto report = unity::rules::check_kept_verdicts({files.begin(), files.end()}, o);
  ASSERT_FALSE(report.rules.empty()) << "no rules in the shipped files";
  for (const auto& f : report.files)
    EXPECT_TRUE(f.had_kept_verdicts) << f.file << " has no kept verdicts (" << f.verdicts_file
                                     << "): `unity rules verify FILE --keep`";
  // A rule's "verified" field is what the matcher trusts: a verdict that covers less fails it, and
  // so does a kept verdict that is not current or that a new proof does not give again.
  for (const auto& c : report.rules) EXPECT_TRUE(c.ok) << c.rule << ": " << c.problem;
  for (const auto& p : report.problems) ADD_FAILURE() << p;
  EXPECT_TRUE(report.all_ok());
  const unity::rules::VerdictCounts n = report.counts();
  std::printf(
      "%zu rules in %zu files: %d verified, %d verified within a bound; %d proved now (%d a sample "
      "of current kept verdicts, %.1f s), %zu kept verdicts trusted\n",
      report.rules.size(), files.size(), n.verified, n.bounded, report.proved, report.sampled,
      report.seconds, report.rules.size() - static_cast<std::size_t>(report.proved));
  for (const auto& [scope, count] : n.by_scope)
    std::printf("  proved for %s: %d\n", scope.c_str(), count);
}

const fs::path kRules = fs::path(UNITY_SOURCE_DIR) / "rules";

}  // namespace

// The hand-written rules are few (133) and the ones people edit: every one is proved on every run,
// and each proof must give its kept verdict again.
TEST(ShippedRules, HandWrittenRuleFilesAreVerified) {
  const auto files = rule_files_in(kRules);
  ASSERT_FALSE(files.empty());
  unity::rules::VerdictCheckOptions o;  // verify's defaults
  o.prove_all = true;
  expect_verified(files, o);
}

// The generated file holds about 1,750 rules, half an hour of proofs on two cores. Each verdict
// depends on its rule, the axioms, the options and Z3's version alone, and is kept with them
// (rules/generated/verdicts/): the rules whose kept verdict is not current are proved again, and a
// sample of the others, which must give their kept verdicts again. A full proof of every rule is
// `unity rules verify rules/*.json rules/generated/*.json`.
TEST(ShippedRules, GeneratedRuleFilesAreVerified) {
  const auto files = rule_files_in(kRules / "generated");
  if (files.empty()) GTEST_SKIP() << "no rules/generated/*.json";
  unity::rules::VerdictCheckOptions o;
  o.prove_all = false;
  o.sample = kGeneratedSample;
  expect_verified(files, o);
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
