// The rule format, pattern matching and application.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/rules/substitution.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

std::string load_error(const nlohmann::json& j) {
  try {
    rules_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

nlohmann::json one_rule() {
  return nlohmann::json::parse(R"({
    "format": "unity-rules", "version": 1,
    "rules": [{
      "name": "relu_sample_parallel", "kind": "parallel", "inputs": ["x"], "parameters": ["d"],
      "source": {"nodes": [{"name": "op", "op": "Relu", "inputs": ["x"]}], "outputs": ["op"]},
      "target": {"nodes": [
        {"name": "px", "op": "Partition", "inputs": ["x"], "attrs": {"dim": 0, "degree": "d"}},
        {"name": "op2", "op": "Relu", "inputs": ["px"], "copy_attrs_of": "op"},
        {"name": "out", "op": "Combine", "inputs": ["op2"], "attrs": {"dim": 0, "degree": "d"}}],
        "outputs": ["out"]}}]})");
}

const Rule& rule(const RuleSet& set, const std::string& name) {
  const Rule* r = set.find(name);
  EXPECT_NE(r, nullptr) << name;
  return *r;
}

}  // namespace

TEST(Rules, DefaultSetLoadsAndRoundTrips) {
  const RuleSet rules = default_rules();
  EXPECT_GE(rules.rules.size(), 15u);
  const RuleSet back = rules_from_json(rules_to_json(rules));
  EXPECT_EQ(rules_to_json(back), rules_to_json(rules));
}

TEST(Rules, MalformedRulesNameTheRuleAndTheField) {
  auto j = one_rule();
  j["rules"][0]["target"]["nodes"][1]["op"] = "Rleu";
  EXPECT_NE(
      load_error(j).find("rule 'relu_sample_parallel': target.nodes[1].op: unknown op 'Rleu'"),
      std::string::npos)
      << load_error(j);
  j = one_rule();
  j["rules"][0]["kind"] = "magic";
  EXPECT_NE(load_error(j).find("'relu_sample_parallel': kind"), std::string::npos);
  j = one_rule();
  j["rules"][0]["target"]["nodes"][2]["inputs"] = {"nowhere"};
  EXPECT_NE(load_error(j).find("target.nodes[2].inputs: 'nowhere'"), std::string::npos);
  j = one_rule();
  j["rules"][0]["source"]["nodes"][0]["inputs"] = nlohmann::json::array();
  EXPECT_NE(load_error(j).find("source.nodes[0].inputs"), std::string::npos);
  j = one_rule();
  j["rules"][0]["target"]["outputs"] = {"out", "px"};
  EXPECT_NE(load_error(j).find("target.outputs"), std::string::npos);
  j = one_rule();
  j["rules"].push_back(j["rules"][0]);
  EXPECT_NE(load_error(j).find("two rules share this name"), std::string::npos);
  j = one_rule();
  j["rules"][0]["target"]["nodes"][2]["attrs"]["dim"] = "$unbound";
  EXPECT_NE(load_error(j).find("symbol $unbound"), std::string::npos);
}

// Every malformed tensor reference is refused when the file loads, naming the rule and field (an
// empty output index once reached std::stoi in the matcher: an internal error, exit 2).
TEST(Rules, MalformedTensorReferencesAreRefusedWhenTheFileLoads) {
  const std::vector<std::pair<std::string, std::string>> refs = {
      {"x:", "'x:' is not a tensor reference"},
      {"x:-1", "'x:-1' is not a tensor"},
      {":0", "':0' is not a tensor reference"},
      {"x:1:2", "'x:1:2' is not a tensor"},
      {"x:99999999", "'x:99999999' is not a tensor"},
      {"x: 1", "'x: 1' is not a tensor"},
      {"x:0", "'x:0' reads an output of 'x', which is no node"}};
  for (const auto& [ref, message] : refs) {
    auto j = one_rule();
    j["rules"][0]["source"]["nodes"][0]["inputs"] = {ref};
    const std::string error = load_error(j);
    EXPECT_NE(error.find("rule 'relu_sample_parallel': source.nodes[0].inputs: " + message),
              std::string::npos)
        << ref << ": " << error;
  }
  auto j = one_rule();
  j["rules"][0]["target"]["outputs"] = {"out:"};
  EXPECT_NE(load_error(j).find("target.outputs: 'out:' is not a tensor"), std::string::npos);
  j = one_rule();
  j["rules"][0]["inputs"] = {"x:0"};
  EXPECT_NE(load_error(j).find("inputs: 'x:0': a name holds no ':'"), std::string::npos);
  j = one_rule();
  j["rules"][0]["target"]["nodes"][0]["name"] = "p:x";
  EXPECT_NE(load_error(j).find("target.nodes[0].name: 'p:x'"), std::string::npos);
  // A node's output by index still loads.
  j = one_rule();
  j["rules"][0]["target"]["nodes"][1]["inputs"] = {"px:0"};
  EXPECT_EQ(load_error(j), "no error");
  EXPECT_EQ(rule_ref("px:12").output, 12);
  EXPECT_THROW(rule_ref("px:"), InputError);
}

TEST(Rules, MatchAndApplyPreserveTheOutputShape) {
  const RuleSet set = rules_from_json(one_rule());
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 4});
  auto r = b.relu(x, "act");
  b.tanh(r, "after");
  const auto matches = find_matches(g, set.rules[0]);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].nodes.at("op"), r.node);
  auto applied = apply_substitution(g, matches[0], {{"d", 2}});
  ASSERT_TRUE(applied);
  EXPECT_NO_THROW(applied->validate());
  EXPECT_EQ(applied->count(OpType::Partition), 1);
  EXPECT_EQ(applied->count(OpType::Combine), 1);
  EXPECT_FALSE(applied->contains(r.node));
  // A degree that does not divide the batch does not apply.
  EXPECT_FALSE(apply_substitution(g, matches[0], {{"d", 3}}));
}

// The search rewrites one graph many times in place: the result must be the copy's, and a rewrite
// that does not fit must leave nothing behind (no node, no used-up id).
TEST(Rules, InPlaceRewriteEqualsTheCopyAndUndoesAFailure) {
  const RuleSet set = rules_from_json(one_rule());
  Graph g;
  GraphBuilder b(g);
  b.tanh(b.relu(b.input("x", {8, 4}), "act"), "after");
  const auto matches = find_matches(g, set.rules[0]);
  ASSERT_EQ(matches.size(), 1u);

  Graph failed = g;
  EXPECT_FALSE(apply_substitution_in_place(failed, matches[0], {{"d", 3}}));  // 3 does not divide 8
  EXPECT_EQ(failed.size(), g.size());
  EXPECT_EQ(failed.next_id(), g.next_id());
  EXPECT_EQ(failed.structural_hash(), g.structural_hash());
  for (const auto& [id, n] : g.nodes()) EXPECT_EQ(failed.node(id).inputs, n.inputs);

  const auto copy = apply_substitution(g, matches[0], {{"d", 2}});
  ASSERT_TRUE(copy);
  Graph in_place = g;
  ASSERT_TRUE(apply_substitution_in_place(in_place, matches[0], {{"d", 2}}));
  EXPECT_EQ(in_place.structural_hash(), copy->structural_hash());
  EXPECT_EQ(in_place.next_id(), copy->next_id());
  EXPECT_NE(in_place.structural_hash(), g.structural_hash());
  EXPECT_NO_THROW(in_place.validate());
}

TEST(Rules, InnerNodesUsedElsewhereBlockAMatch) {
  const RuleSet rules = default_rules();
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 16});
  auto lin = b.linear(x, 16, "fc", false);
  auto act = b.relu(lin, "act");
  b.add(act, lin, "skip");  // the Linear's output is needed without the ReLU
  EXPECT_TRUE(find_matches(g, rule(rules, "fuse_linear_relu")).empty());
}

TEST(Rules, FusionAndCancellation) {
  const RuleSet rules = default_rules();
  const Graph mnist = zoo::build("mnist-mlp");
  const auto fuse = find_matches(mnist, rule(rules, "fuse_linear_relu"));
  ASSERT_EQ(fuse.size(), 1u);
  auto fused = apply_substitution(mnist, fuse[0], {});
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->count(OpType::Relu), 0);
  EXPECT_EQ(fused->count(OpType::Linear), 2);
  // ...and back.
  const auto unfuse = find_matches(*fused, rule(rules, "unfuse_linear_relu"));
  ASSERT_EQ(unfuse.size(), 1u);
  auto back = apply_substitution(*fused, unfuse[0], {});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->structural_hash(), mnist.structural_hash());

  // Partition(Combine(x)) with the same dim and degree is x.
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 4});
  auto p = b.partition(b.relu(x, "a"), 0, 2, "p");
  auto r = b.relu(p, "b");
  auto c = b.combine(r, 0, 2, "c");
  auto p2 = b.partition(c, 0, 2, "p2");
  b.relu(p2, "d");
  const auto m = find_matches(g, rule(rules, "cancel_combine_partition"));
  ASSERT_EQ(m.size(), 1u);
  auto cancelled = apply_substitution(g, m[0], {});
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->count(OpType::Combine), 0);
  EXPECT_EQ(cancelled->count(OpType::Partition), 1);
  EXPECT_NO_THROW(cancelled->validate());
}

TEST(Rules, SymbolsMustAgree) {
  const RuleSet rules = default_rules();
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 8});
  auto c = b.combine(b.partition(b.relu(x, "a"), 0, 4, "p"), 0, 2, "c");  // degrees differ
  b.partition(c, 0, 4, "p2");
  EXPECT_TRUE(find_matches(g, rule(rules, "cancel_combine_partition")).empty());
}

// A rule is applied only inside the scope its proof covers (issue 18): a proof for degrees up to 8
// says nothing about degree 12, and one for 1 to 8 Concat inputs nothing about 9.
TEST(Rules, ProvedScopeParsesPrintsAndCompares) {
  const auto bounded = parse_proved_scope("degrees up to 8; 1 to 3 variadic inputs");
  ASSERT_TRUE(bounded);
  EXPECT_EQ(bounded->max_degree, 8);
  EXPECT_EQ(bounded->max_variadic, 3);
  EXPECT_EQ(to_string(*bounded), "degrees up to 8; 1 to 3 variadic inputs");
  EXPECT_EQ(parse_proved_scope("all degrees and shapes"), ProvedScope{});
  EXPECT_EQ(parse_proved_scope(""), ProvedScope{});
  EXPECT_FALSE(parse_proved_scope("probably fine"));
  EXPECT_FALSE(parse_proved_scope("degrees up to eight"));
  EXPECT_TRUE(ProvedScope{}.includes(*bounded));
  EXPECT_FALSE(bounded->includes(ProvedScope{}));
  const ProvedScope four{4, std::nullopt}, eight{8, std::nullopt};
  EXPECT_FALSE(four.includes(eight));
  EXPECT_TRUE(eight.includes(four));
  EXPECT_EQ(to_json(*bounded).dump(), R"({"degrees":8,"variadic_inputs":3})");

  auto j = one_rule();
  j["rules"][0]["verified"] = "checked by hand";
  EXPECT_NE(load_error(j).find("'relu_sample_parallel': verified"), std::string::npos)
      << load_error(j);
}

TEST(Rules, ARuleProvedUpToDegreeEightIsNotAppliedAtDegreeTwelve) {
  auto j = one_rule();
  j["rules"][0]["verified"] = "degrees up to 8";
  const RuleSet set = rules_from_json(j);
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {96, 4});
  b.tanh(b.relu(x, "act"), "after");
  const auto matches = find_matches(g, set.rules[0]);
  ASSERT_EQ(matches.size(), 1u);
  std::vector<std::int64_t> chosen;
  for (const auto& p : parameter_choices(g, matches[0], {2, 4, 8, 12, 24}))
    chosen.push_back(p.at("d"));
  EXPECT_EQ(chosen, (std::vector<std::int64_t>{2, 4, 8}));
  EXPECT_TRUE(apply_substitution(g, matches[0], {{"d", 8}}));
  EXPECT_FALSE(apply_substitution(g, matches[0], {{"d", 12}}));
  // The same rule with no bound applies at 12.
  EXPECT_TRUE(
      apply_substitution(g, find_matches(g, rules_from_json(one_rule()).rules[0])[0], {{"d", 12}}));

  // A degree bound to a symbol of the source pattern: Combine($d) then Partition($d) cancels for
  // the degrees its proof covers only.
  Rule c = rule(default_rules(), "cancel_combine_partition");
  c.proved = *parse_proved_scope("degrees up to 8");
  for (const std::int64_t d : {8, 12}) {
    Graph h;
    GraphBuilder hb(h);
    auto p = hb.partition(hb.relu(hb.input("x", {96, 4}), "a"), 0, d, "p");
    auto combined = hb.combine(hb.relu(p, "b"), 0, d, "c");
    hb.relu(hb.partition(combined, 0, d, "p2"), "d");
    EXPECT_EQ(find_matches(h, c).size(), d <= 8 ? 1u : 0u) << "degree " << d;
  }
}

TEST(Rules, AVariadicRuleAppliesToNoMoreInputsThanItsProofCovers) {
  const RuleSet rules = default_rules();
  const Rule& r = rule(rules, "concat_partition");
  ASSERT_EQ(r.proved.max_variadic, 8);
  for (const int inputs : {8, 9}) {
    Graph g;
    GraphBuilder b(g);
    std::vector<TensorRef> xs;
    for (int i = 0; i < inputs; ++i) xs.push_back(b.input(fmt::format("x{}", i), {8, 4}));
    b.relu(b.concat(xs, 1, "cat"), "after");
    EXPECT_EQ(find_matches(g, r).size(), inputs <= 8 ? 1u : 0u) << inputs << " inputs";
  }
}

// Every shipped rule states a scope the loader understands, and the bounded ones are the generated
// rules proved for degrees up to 8 and the Concat rules proved for 1 to 8 inputs (1 to 32 for the
// three that cut a Concat into pieces).
TEST(Rules, ShippedRulesCarryTheirProvedScope) {
  std::map<std::string, int> by_scope;
  for (const auto& r : default_rules().rules) ++by_scope[to_string(r.proved)];
  std::string counts;
  for (const auto& [scope, n] : by_scope) counts += fmt::format("{}: {}\n", scope, n);
  std::printf("%s", counts.c_str());
  EXPECT_EQ(by_scope["degrees up to 8"], 283) << counts;
  EXPECT_EQ(by_scope["all degrees and shapes; 1 to 8 variadic inputs"], 9) << counts;
  EXPECT_EQ(by_scope["all degrees and shapes; 1 to 32 variadic inputs"], 3) << counts;
  EXPECT_EQ(by_scope["degrees up to 8; 1 to 8 variadic inputs"], 1) << counts;
  EXPECT_EQ(by_scope["all degrees and shapes"], 1692)
      << counts;  // lrn, hardmax, trilu: 3; arithmetic: 2; random, det (slices.json): 2
}

// Two rules each sound alone: a Linear split by its input features (its bias replicated, added by
// the first partial sum only) and a Linear's bias made an Add. Applied one after the other, the
// Add would take the bias once per partial sum, and the Reduce would sum two biases (the joint
// plan of torchvision's MobileNetV2 did, and its run refused it). The second rewrite is refused.
TEST(Rules, ARewriteThatChangesWhatReplicasMeanIsRefused) {
  const RuleSet& rules = default_rules();
  Graph g;
  GraphBuilder b(g);
  b.linear(b.input("x", {8, 16}), 4, "fc");
  const auto split = find_matches(g, rule(rules, "linear_bias_reduction_parallel"));
  ASSERT_EQ(split.size(), 1u);
  const auto parallel = apply_substitution(g, split[0], {{"d", 2}});
  ASSERT_TRUE(parallel);
  const auto bias = find_matches(*parallel, rule(rules, "linear__add_linear"));
  ASSERT_EQ(bias.size(), 1u);
  EXPECT_EQ(parallel->shape(bias[0].inputs.at("b")).replica, 2);  // the replicated bias
  EXPECT_FALSE(apply_substitution(*parallel, bias[0], {}));
  // On the serial Linear the same rule applies.
  const auto serial = find_matches(g, rule(rules, "linear__add_linear"));
  ASSERT_EQ(serial.size(), 1u);
  EXPECT_TRUE(apply_substitution(g, serial[0], {}));
}
