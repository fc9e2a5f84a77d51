// The verifier proves correct rules, refutes wrong ones with a concrete counterexample, and never
// verifies a rule its concrete semantics contradicts.
#include <gtest/gtest.h>

#include "unity/core/rules/rule.h"
#include "unity/rules/verifier.h"

using namespace unity;
using namespace unity::rules;

namespace {

Rule one_rule(const std::string& text) {
  const auto j =
      nlohmann::json::parse(R"({"format": "unity-rules", "version": 1, "rules": [)" + text + "]}");
  return rules_from_json(j).rules.at(0);
}

RuleVerification check(const std::string& text) { return verify_rule(one_rule(text)); }

}  // namespace

// The paper's example property: a MatMul split along its reduction dim gives partial sums that a
// Reduce adds up: MatMul(a, b) = Reduce(d, MatMul(Partition(-1, d, a), Partition(-2, d, b))).
TEST(Verifier, ProvesTheReductionParallelMatMulForEveryDegree) {
  const auto r = check(
      R"({"name": "matmul_reduction", "kind": "parallel", "inputs": ["a", "b"], "parameters": ["d"],
    "source": {"nodes": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"]}], "outputs": ["mm"]},
    "target": {"nodes": [
      {"name": "pa", "op": "Partition", "inputs": ["a"], "attrs": {"dim": -1, "degree": "d"}},
      {"name": "pb", "op": "Partition", "inputs": ["b"], "attrs": {"dim": -2, "degree": "d"}},
      {"name": "mm2", "op": "MatMul", "inputs": ["pa", "pb"]},
      {"name": "sum", "op": "Reduce", "inputs": ["mm2"], "attrs": {"degree": "d"}}], "outputs": ["sum"]}})");
  EXPECT_EQ(r.verdict, Verdict::Verified) << r.detail;
  EXPECT_GT(r.concrete_cases, 0);
}

TEST(Verifier, ProvesDataParallelismOfALinearWithBiasAlongAnySampleDim) {
  const auto r =
      check(R"({"name": "linear_bias_sample", "kind": "parallel", "inputs": ["x", "w", "b"],
    "parameters": ["d", {"name": "k", "domain": "dim", "of": "x"}],
    "source": {"nodes": [{"name": "lin", "op": "Linear", "inputs": ["x", "w", "b"]}], "outputs": ["lin"]},
    "target": {"nodes": [
      {"name": "px", "op": "Partition", "inputs": ["x"], "attrs": {"dim": "k", "degree": "d"}},
      {"name": "rw", "op": "Replicate", "inputs": ["w"], "attrs": {"degree": "d"}},
      {"name": "rb", "op": "Replicate", "inputs": ["b"], "attrs": {"degree": "d"}},
      {"name": "lin2", "op": "Linear", "inputs": ["px", "rw", "rb"], "copy_attrs_of": "lin"},
      {"name": "out", "op": "Combine", "inputs": ["lin2"], "attrs": {"dim": "k", "degree": "d"}}], "outputs": ["out"]}})");
  EXPECT_EQ(r.verdict, Verdict::Verified) << r.detail;
}

// A rule may carry the bounded claim it was generated with ("verified": "degrees up to 8"): verify
// checks that claim first and says so; the claim is no licence: a wrong rule stays refuted, and the
// field survives a round trip through the rule format.
TEST(Verifier, ChecksABoundedClaimFirstAndNeverTrustsIt) {
  const std::string matmul =
      R"({"name": "matmul_reduction", "kind": "parallel", "inputs": ["a", "b"],
    "parameters": ["d"], "verified": "degrees up to 8",
    "source": {"nodes": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"]}], "outputs": ["mm"]},
    "target": {"nodes": [
      {"name": "pa", "op": "Partition", "inputs": ["a"], "attrs": {"dim": -1, "degree": "d"}},
      {"name": "pb", "op": "Partition", "inputs": ["b"], "attrs": {"dim": -2, "degree": "d"}},
      {"name": "mm2", "op": "MatMul", "inputs": ["pa", "pb"]},
      {"name": "sum", "op": "Reduce", "inputs": ["mm2"], "attrs": {"degree": "d"}}], "outputs": ["sum"]}})";
  const Rule claimed = one_rule(matmul);
  EXPECT_EQ(claimed.verified, "degrees up to 8");
  RuleSet set;
  set.rules.push_back(claimed);
  EXPECT_EQ(rules_from_json(rules_to_json(set)).rules.at(0).verified, "degrees up to 8");
  const auto r = verify_rule(claimed);
  EXPECT_EQ(r.verdict, Verdict::VerifiedBounded) << r.detail;
  EXPECT_EQ(r.detail, "degrees up to 8");

  const auto wrong = check(R"({"name": "relu_reduce", "kind": "parallel", "inputs": ["x"],
    "verified": "degrees up to 8",
    "source": {"nodes": [{"name": "r", "op": "Reduce", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "relu", "op": "Relu", "inputs": ["r"]}], "outputs": ["relu"]},
    "target": {"nodes": [{"name": "relu2", "op": "Relu", "inputs": ["x"]},
                         {"name": "r2", "op": "Reduce", "inputs": ["relu2"], "attrs": {"degree": "$d"}}], "outputs": ["r2"]}})");
  EXPECT_EQ(wrong.verdict, Verdict::Refuted) << wrong.detail;
}

// Reduce where Replicate belongs: Relu commutes with Replicate, not with Reduce (the Relu of a sum
// is not the sum of the Relus); the target reads partial sums with a non-linear operator.
TEST(Verifier, RefutesReduceWhereReplicateBelongs) {
  const auto good = check(R"({"name": "relu_replicate", "kind": "parallel", "inputs": ["x"],
    "source": {"nodes": [{"name": "r", "op": "Replicate", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "relu", "op": "Relu", "inputs": ["r"]}], "outputs": ["relu"]},
    "target": {"nodes": [{"name": "relu2", "op": "Relu", "inputs": ["x"]},
                         {"name": "r2", "op": "Replicate", "inputs": ["relu2"], "attrs": {"degree": "$d"}}], "outputs": ["r2"]}})");
  EXPECT_EQ(good.verdict, Verdict::Verified) << good.detail;
  const auto bad = check(R"({"name": "relu_reduce", "kind": "parallel", "inputs": ["x"],
    "source": {"nodes": [{"name": "r", "op": "Reduce", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "relu", "op": "Relu", "inputs": ["r"]}], "outputs": ["relu"]},
    "target": {"nodes": [{"name": "relu2", "op": "Relu", "inputs": ["x"]},
                         {"name": "r2", "op": "Reduce", "inputs": ["relu2"], "attrs": {"degree": "$d"}}], "outputs": ["r2"]}})");
  EXPECT_EQ(bad.verdict, Verdict::Refuted) << bad.detail;
  EXPECT_NE(bad.detail.find("partial sums"), std::string::npos) << bad.detail;
  EXPECT_NE(bad.detail.find("inputs x ="), std::string::npos) << bad.detail;
}

// The product of two sums is not the sum of the products.
TEST(Verifier, RefutesMultiplyingPartialSums) {
  const auto r = check(R"({"name": "mul_reduce", "kind": "parallel", "inputs": ["x", "y"],
    "source": {"nodes": [{"name": "rx", "op": "Reduce", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "ry", "op": "Reduce", "inputs": ["y"], "attrs": {"degree": "$d"}},
                         {"name": "m", "op": "Mul", "inputs": ["rx", "ry"]}], "outputs": ["m"]},
    "target": {"nodes": [{"name": "m2", "op": "Mul", "inputs": ["x", "y"]},
                         {"name": "r", "op": "Reduce", "inputs": ["m2"], "attrs": {"degree": "$d"}}], "outputs": ["r"]}})");
  EXPECT_EQ(r.verdict, Verdict::Refuted) << r.detail;
}

// A partition along a dim the operator cannot split: BatchNorm computes its statistics over the
// samples, so splitting them changes the result (the shapes all infer: only the values tell).
TEST(Verifier, RefutesSplittingBatchNormAlongItsStatisticsDim) {
  const auto r = check(
      R"({"name": "batchnorm_sample", "kind": "parallel", "inputs": ["x", "s", "b"], "parameters": ["d"],
    "source": {"nodes": [{"name": "bn", "op": "BatchNorm", "inputs": ["x", "s", "b"]}], "outputs": ["bn"]},
    "target": {"nodes": [
      {"name": "px", "op": "Partition", "inputs": ["x"], "attrs": {"dim": 0, "degree": "d"}},
      {"name": "rs", "op": "Replicate", "inputs": ["s"], "attrs": {"degree": "d"}},
      {"name": "rb", "op": "Replicate", "inputs": ["b"], "attrs": {"degree": "d"}},
      {"name": "bn2", "op": "BatchNorm", "inputs": ["px", "rs", "rb"], "copy_attrs_of": "bn"},
      {"name": "out", "op": "Combine", "inputs": ["bn2"], "attrs": {"dim": 0, "degree": "d"}}], "outputs": ["out"]}})");
  EXPECT_EQ(r.verdict, Verdict::Refuted) << r.detail;
  EXPECT_NE(r.detail.find("differs"), std::string::npos) << r.detail;
}

// Softmax normalises over its axis: processing that axis in micro-batches normalises each on its
// own.
TEST(Verifier, RefutesPipeliningSoftmaxAlongItsAxis) {
  const auto r = check(
      R"({"name": "softmax_pipeline", "kind": "parallel", "inputs": ["x"], "parameters": ["d"],
    "source": {"nodes": [{"name": "sm", "op": "Softmax", "inputs": ["x"], "attrs": {"axis": -1}}], "outputs": ["sm"]},
    "target": {"nodes": [
      {"name": "p", "op": "Pipeline", "inputs": ["x"], "attrs": {"dim": -1, "degree": "d"}},
      {"name": "sm2", "op": "Softmax", "inputs": ["p"], "copy_attrs_of": "sm"},
      {"name": "out", "op": "Batch", "inputs": ["sm2"], "attrs": {"dim": -1, "degree": "d"}}], "outputs": ["out"]}})");
  EXPECT_EQ(r.verdict, Verdict::Refuted) << r.detail;
}

// Summing copies is meaningless (the executor rejects it; only degree 1 makes it defined), and Z3
// cannot prove it from the axioms: not verified.
TEST(Verifier, DoesNotVerifyAReduceOfCopies) {
  const auto r = check(R"({"name": "reduce_of_copies", "kind": "parallel", "inputs": ["x"],
    "source": {"nodes": [{"name": "r", "op": "Replicate", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "s", "op": "Reduce", "inputs": ["r"], "attrs": {"degree": "$d"}}], "outputs": ["s"]},
    "target": {"nodes": [], "outputs": ["x"]}})");
  EXPECT_EQ(r.verdict, Verdict::Unknown) << r.detail;
}

TEST(Verifier, ATargetAttributeWithNoValueMakesTheRuleInvalid) {
  const auto r = check(R"({"name": "no_axis", "kind": "algebraic", "inputs": ["x", "y"],
    "source": {"nodes": [{"name": "a", "op": "Add", "inputs": ["x", "y"]}], "outputs": ["a"]},
    "target": {"nodes": [{"name": "c", "op": "Concat", "inputs": ["x", "y"]},
                         {"name": "a2", "op": "Add", "inputs": ["x", "y"]}], "outputs": ["a2"]}})");
  EXPECT_EQ(r.verdict, Verdict::Invalid) << r.detail;
  EXPECT_NE(r.detail.find("axis"), std::string::npos) << r.detail;
}

TEST(Verifier, ReportCountsAndJson) {
  RuleSet set;
  set.rules.push_back(one_rule(R"({"name": "cancel", "kind": "parallel", "inputs": ["x"],
    "source": {"nodes": [{"name": "p", "op": "Partition", "inputs": ["x"], "attrs": {"dim": "$k", "degree": "$d"}},
                         {"name": "c", "op": "Combine", "inputs": ["p"], "attrs": {"dim": "$k", "degree": "$d"}}], "outputs": ["c"]},
    "target": {"nodes": [], "outputs": ["x"]}})"));
  set.rules.push_back(one_rule(R"({"name": "wrong", "kind": "parallel", "inputs": ["x"],
    "source": {"nodes": [{"name": "r", "op": "Reduce", "inputs": ["x"], "attrs": {"degree": "$d"}},
                         {"name": "e", "op": "Exp", "inputs": ["r"]}], "outputs": ["e"]},
    "target": {"nodes": [{"name": "e2", "op": "Exp", "inputs": ["x"]},
                         {"name": "r2", "op": "Reduce", "inputs": ["e2"], "attrs": {"degree": "$d"}}], "outputs": ["r2"]}})"));
  const auto report = verify_rules(set);
  EXPECT_EQ(report.verified, 1);
  EXPECT_EQ(report.refuted, 1);
  EXPECT_FALSE(report.all_ok());
  const auto j = to_json(report);
  EXPECT_EQ(j["rules"][1]["verdict"], "refuted");
  EXPECT_EQ(j["verified"], 1);
}

// What the matcher trusts is the rule's "verified" field: a rule claiming more than its proof
// covers fails verification, one claiming what was proved passes, and a report of no rules is no
// proof.
TEST(Verifier, ARuleClaimingMoreThanItsProofFailsAndAnEmptyReportIsNotOk) {
  const std::string concat = R"({"name": "concat_relu", "kind": "algebraic", "inputs": ["xs*"],
    "source": {"nodes": [{"name": "c", "op": "Concat", "inputs": ["xs*"], "attrs": {"axis": 1}},
                         {"name": "r", "op": "Relu", "inputs": ["c"]}], "outputs": ["r"]},
    "target": {"nodes": [{"name": "rx", "op": "Relu", "inputs": ["xs*"], "foreach": "xs*"},
                         {"name": "c2", "op": "Concat", "inputs": ["rx*"], "copy_attrs_of": "c"}],
               "outputs": ["c2"]}})";
  RuleSet claims_all;
  claims_all.rules.push_back(one_rule(concat));  // no "verified": every number of inputs
  const auto report = verify_rules(claims_all);
  ASSERT_EQ(report.rules.size(), 1u);
  EXPECT_FALSE(report.all_ok());
  EXPECT_NE(
      report.rules[0].detail.find("1 to 8 variadic inputs, but its \"verified\" field claims"),
      std::string::npos)
      << report.rules[0].detail;

  auto bounded = nlohmann::json::parse(concat);
  bounded["verified"] = "all degrees and shapes; 1 to 8 variadic inputs";
  RuleSet claims_proved;
  claims_proved.rules.push_back(one_rule(bounded.dump()));
  const auto ok = verify_rules(claims_proved);
  EXPECT_TRUE(ok.all_ok()) << ok.rules[0].detail;
  EXPECT_EQ(ok.by_scope.at("all degrees and shapes; 1 to 8 variadic inputs"), 1);
  EXPECT_EQ(to_json(ok)["rules"][0]["proved"]["variadic_inputs"], 8);

  EXPECT_FALSE(verify_rules(RuleSet{}).all_ok());
}
