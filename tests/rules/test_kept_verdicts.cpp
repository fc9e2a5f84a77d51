// Kept verdicts: a rule whose text changes, or whose prover changes, is proved again; a kept
// verdict that no longer matches its rule, or that a new proof does not give again, fails the
// check; a rule's verdict does not depend on the rules verified with it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/rules/rule.h"
#include "unity/rules/verdict_check.h"

using namespace unity;
using namespace unity::rules;
namespace fs = std::filesystem;

namespace {

// Three rules that prove in well under a second each.
const char* kRuleText = R"({"format": "unity-rules", "version": 1, "rules": [
 {"name": "relu_sample", "kind": "parallel", "inputs": ["x"], "parameters": ["d"],
  "source": {"nodes": [{"name": "op", "op": "Relu", "inputs": ["x"]}], "outputs": ["op"]},
  "target": {"nodes": [
    {"name": "px", "op": "Partition", "inputs": ["x"], "attrs": {"dim": 0, "degree": "d"}},
    {"name": "op2", "op": "Relu", "inputs": ["px"], "copy_attrs_of": "op"},
    {"name": "out", "op": "Combine", "inputs": ["op2"], "attrs": {"dim": 0, "degree": "d"}}],
   "outputs": ["out"]}},
 {"name": "matmul_reduction", "kind": "parallel", "inputs": ["a", "b"], "parameters": ["d"],
  "source": {"nodes": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"]}], "outputs": ["mm"]},
  "target": {"nodes": [
    {"name": "pa", "op": "Partition", "inputs": ["a"], "attrs": {"dim": -1, "degree": "d"}},
    {"name": "pb", "op": "Partition", "inputs": ["b"], "attrs": {"dim": -2, "degree": "d"}},
    {"name": "mm2", "op": "MatMul", "inputs": ["pa", "pb"]},
    {"name": "sum", "op": "Reduce", "inputs": ["mm2"], "attrs": {"degree": "d"}}],
   "outputs": ["sum"]}},
 {"name": "partition_combine", "kind": "parallel", "inputs": ["x"],
  "source": {"nodes": [
    {"name": "p", "op": "Partition", "inputs": ["x"], "attrs": {"dim": "$k", "degree": "$d"}},
    {"name": "c", "op": "Combine", "inputs": ["p"], "attrs": {"dim": "$k", "degree": "$d"}}],
   "outputs": ["c"]},
  "target": {"nodes": [{"name": "i", "op": "Identity", "inputs": ["x"]}], "outputs": ["i"]}}]})";

class KeptVerdictsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("unity-kept-verdicts-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = dir_ / "some.json";
    std::ofstream(file_) << kRuleText;
  }
  void TearDown() override { fs::remove_all(dir_); }

  VerdictCheckReport check(bool prove_all = false, std::size_t sample = 0, bool keep = false) {
    VerdictCheckOptions o;
    o.prove_all = prove_all;
    o.sample = sample;
    o.keep = keep;
    return check_kept_verdicts({file_}, o);
  }
  // Keeps every rule's verdict, as `unity rules verify FILE --keep` does.
  void keep_all() {
    const auto report = check(true, 0, true);
    ASSERT_TRUE(report.all_ok());
    report.write_kept_verdicts();
  }
  nlohmann::json kept_json() { return read_json_file(kept_verdicts_path(file_)); }
  void write_kept_json(const nlohmann::json& j) { std::ofstream(kept_verdicts_path(file_)) << j; }
  void edit_rules(const std::function<void(nlohmann::json&)>& edit) {
    auto j = read_json_file(file_);
    edit(j);
    std::ofstream(file_) << j.dump(1);
  }
  const RuleCheck& rule(const VerdictCheckReport& r, const std::string& name) {
    for (const auto& c : r.rules)
      if (c.rule == name) return c;
    ADD_FAILURE() << name;
    return r.rules.front();
  }

  fs::path dir_, file_;
};

}  // namespace

TEST_F(KeptVerdictsTest, KeptVerdictsLieBesideTheRuleFileAndRoundTrip) {
  EXPECT_EQ(kept_verdicts_path("rules/dense.json"), fs::path("rules/verdicts/dense.json"));
  keep_all();
  const auto kept = load_kept_verdicts(kept_verdicts_path(file_));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->prover, prover_key({}));
  ASSERT_EQ(kept->verdicts.size(), 3u);
  EXPECT_EQ(kept->verdicts[1].rule, "matmul_reduction");
  EXPECT_EQ(kept->verdicts[1].verdict, Verdict::Verified);
  EXPECT_EQ(kept->verdicts[1].detail, "all degrees and shapes");
  EXPECT_GT(kept->verdicts[1].concrete_cases, 0);
  const RuleSet rules = load_rule_file(file_);
  EXPECT_EQ(kept->verdicts[1].rule_hash, rule_text_hash(rules.rules[1]));
  // Writing what was read gives the same text: nothing but the verdicts changes a kept file.
  const std::string before = nlohmann::json(kept_json()).dump();
  save_kept_verdicts(kept_verdicts_path(file_), *kept);
  EXPECT_EQ(kept_json().dump(), before);
}

TEST_F(KeptVerdictsTest, CurrentKeptVerdictsAreTrustedWithoutAProof) {
  keep_all();
  const auto report = check();
  EXPECT_TRUE(report.all_ok());
  EXPECT_EQ(report.proved, 0);
  for (const auto& c : report.rules) {
    EXPECT_EQ(c.state, KeptState::Current) << c.rule;
    EXPECT_FALSE(c.proof.has_value()) << c.rule;
  }
}

TEST_F(KeptVerdictsTest, AChangedRuleIsProvedAgainAndItsStaleVerdictFails) {
  keep_all();
  edit_rules([](nlohmann::json& j) { j["rules"][1]["description"] = "a new description"; });
  const auto report = check();
  EXPECT_EQ(report.proved, 1);
  const RuleCheck& c = rule(report, "matmul_reduction");
  EXPECT_EQ(c.state, KeptState::Changed);
  ASSERT_TRUE(c.proof.has_value());
  EXPECT_EQ(c.proof->verdict, Verdict::Verified);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.problem.find("the rule changed since its verdict was kept"), std::string::npos)
      << c.problem;
  EXPECT_NE(c.problem.find("--changed --keep"), std::string::npos) << c.problem;
  EXPECT_FALSE(report.all_ok());
  // Keeping it again makes the file current.
  const auto kept = check(false, 0, true);
  ASSERT_TRUE(kept.all_ok());
  kept.write_kept_verdicts();
  const auto again = check();
  EXPECT_TRUE(again.all_ok());
  EXPECT_EQ(again.proved, 0);
}

TEST_F(KeptVerdictsTest, ANewRuleWithoutAKeptVerdictFails) {
  keep_all();
  edit_rules([](nlohmann::json& j) {
    auto copy = j["rules"][0];
    copy["name"] = "relu_sample_again";
    j["rules"].push_back(copy);
  });
  const auto report = check();
  const RuleCheck& c = rule(report, "relu_sample_again");
  EXPECT_EQ(c.state, KeptState::Missing);
  EXPECT_TRUE(c.proof.has_value());
  EXPECT_NE(c.problem.find("no verdict kept for it"), std::string::npos) << c.problem;
  EXPECT_FALSE(report.all_ok());
}

TEST_F(KeptVerdictsTest, ChangedAxiomsProveEveryRuleAgainAndFailUntilKept) {
  keep_all();
  auto j = kept_json();
  j["prover"]["axioms"] = "0000000000000000";
  write_kept_json(j);
  const auto report = check();
  EXPECT_EQ(report.proved, 3);
  for (const auto& c : report.rules) {
    EXPECT_EQ(c.state, KeptState::ProverDiff) << c.rule;
    EXPECT_FALSE(c.ok) << c.rule;
  }
  // Another effort is another prover too.
  j = kept_json();
  j["prover"]["axioms"] = prover_key({}).axioms;
  j["prover"]["options"]["effort"] = 1000;
  write_kept_json(j);
  EXPECT_EQ(check().proved, 3);
}

TEST_F(KeptVerdictsTest, AnotherZ3VersionProvesEveryRuleAgainAndPassesWhereTheyHold) {
  keep_all();
  auto j = kept_json();
  j["prover"]["z3"] = "0.0.1";
  write_kept_json(j);
  const auto report = check();
  EXPECT_EQ(report.proved, 3);
  for (const auto& c : report.rules) EXPECT_EQ(c.state, KeptState::Z3Diff) << c.rule;
  EXPECT_TRUE(report.all_ok());
}

TEST_F(KeptVerdictsTest, AKeptVerdictThatAProofDoesNotGiveAgainFailsTheSample) {
  keep_all();
  auto j = kept_json();
  for (auto& v : j["verdicts"]) v["concrete_cases"] = v["concrete_cases"].get<int>() + 1;
  write_kept_json(j);
  // Not proved, not noticed: the sample is what catches it.
  EXPECT_TRUE(check().all_ok());
  const auto report = check(false, 3);
  EXPECT_EQ(report.sampled, 3);
  EXPECT_EQ(report.failed, 3);
  EXPECT_NE(rule(report, "relu_sample").problem.find("does not reproduce"), std::string::npos)
      << rule(report, "relu_sample").problem;
  // Which rules a sample takes depends on the seed; the same seed takes the same rules.
  VerdictCheckOptions o;
  o.prove_all = false;
  o.sample = 1;
  o.sample_seed = 7;
  const auto first = check_kept_verdicts({file_}, o);
  const auto second = check_kept_verdicts({file_}, o);
  ASSERT_EQ(first.failed, 1);
  for (std::size_t i = 0; i < first.rules.size(); ++i)
    EXPECT_EQ(first.rules[i].sampled, second.rules[i].sampled);
}

TEST_F(KeptVerdictsTest, AKeptVerdictNarrowerThanTheClaimFailsEvenUnproved) {
  keep_all();
  auto j = kept_json();
  j["verdicts"][1]["verdict"] = "verified-bounded";
  j["verdicts"][1]["proved"] = "degrees up to 8";
  write_kept_json(j);
  const auto report = check();
  EXPECT_EQ(report.proved, 0);
  EXPECT_NE(rule(report, "matmul_reduction").problem.find("claims all degrees and shapes"),
            std::string::npos)
      << rule(report, "matmul_reduction").problem;
}

TEST_F(KeptVerdictsTest, AVerdictKeptForARuleNoLongerInTheFileFails) {
  keep_all();
  edit_rules([](nlohmann::json& j) { j["rules"].erase(2); });
  const auto report = check();
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("'partition_combine'"), std::string::npos);
  EXPECT_FALSE(report.all_ok());
}

TEST_F(KeptVerdictsTest, NothingIsKeptUnlessEveryRuleIsVerifiedAsClaimed) {
  keep_all();
  const std::string before = kept_json().dump();
  // A wrong rule: Relu does not commute with a Reduce of partial sums.
  edit_rules([](nlohmann::json& j) {
    j["rules"][0]["target"]["nodes"][0] = {
        {"name", "px"}, {"op", "Reduce"}, {"inputs", {"x"}}, {"attrs", {{"degree", "d"}}}};
    j["rules"][0]["target"]["nodes"][2] = {
        {"name", "out"}, {"op", "Replicate"}, {"inputs", {"op2"}}, {"attrs", {{"degree", "d"}}}};
  });
  const auto report = check(false, 0, true);
  EXPECT_FALSE(report.all_ok());
  EXPECT_THROW(report.write_kept_verdicts(), InputError);
  EXPECT_EQ(kept_json().dump(), before);
}

TEST_F(KeptVerdictsTest, ADamagedKeptVerdictFileIsAnInputErrorNamingIt) {
  fs::create_directories(kept_verdicts_path(file_).parent_path());
  std::ofstream(kept_verdicts_path(file_))
      << R"({"format": "unity-rule-verdicts", "version": 1, "prover": {"axioms": "x", "z3": "4"},
             "verdicts": [{"rule": "relu_sample", "hash": "1", "verdict": "maybe", "detail": ""}]})";
  try {
    check();
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("verdicts[0]: unknown verdict 'maybe'"), std::string::npos)
        << e.what();
  }
}

// A rule's verdict depends on the rule, the axioms, the options and Z3's version, never on the
// rules verified with it: the same rules with one thread or two, alone or beside others, in another
// order, give the same verdicts and details.
TEST(KeptVerdicts, AVerdictDoesNotDependOnTheRulesProvedBesideItOrTheThreads) {
  const RuleSet rules = rules_from_json(nlohmann::json::parse(kRuleText));
  auto verdicts = [](const RuleSet& set, int threads) {
    VerifyOptions o;
    o.threads = threads;
    std::map<std::string, std::string> out;
    for (const auto& r : verify_rules(set, o).rules)
      out[r.rule] = fmt::format("{} | {} | {}", to_string(r.verdict), r.detail, r.concrete_cases);
    return out;
  };
  const auto two = verdicts(rules, 2);
  RuleSet reversed = rules;
  std::reverse(reversed.rules.begin(), reversed.rules.end());
  EXPECT_EQ(verdicts(reversed, 1), two);
  for (const auto& r : rules.rules) {
    RuleSet alone;
    alone.rules.push_back(r);
    EXPECT_EQ(verdicts(alone, 1).at(r.name), two.at(r.name));
  }
}
