// Rule generation on small families: the rules found are the expected ones, general in the degree,
// verified, pruned of redundancy, and usable by the core's matcher.
#include <gtest/gtest.h>

#include "unity/core/pcg/graph_builder.h"
#include "unity/core/rules/substitution.h"
#include "unity/rules/generator.h"

using namespace unity;

namespace {

// One family generated up to `max_ops` operators, with a small concrete check (the tests verify
// the rules found, not the generator's defaults).
rules::GenerateResult generate_family(int max_ops, const std::string& only) {
  rules::GenerateOptions o;
  o.max_ops = max_ops;
  o.only = only;
  o.verify.concrete_trials = 100;
  o.verify.concrete_enough = 6;
  return rules::generate_rules(o);
}

const rules::GenerateResult& relu_rules() {
  static const rules::GenerateResult r = generate_family(3, "parallel,unary.Relu");
  return r;
}

const Rule* find(const RuleSet& set, const std::string& name) {
  for (const auto& r : set.rules)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

TEST(Generator, FindsDataParallelismForReluWithASymbolicDegreeAndDim) {
  const auto& g = relu_rules();
  // Relu(x) = Combine(k, d, Relu(Partition(k, d, x))): the degree and dim are parameters.
  const Rule* r = find(g.rules, "relu__combine_relu_partition");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->parameters, (std::vector<std::string>{"d", "k"}));
  ASSERT_EQ(r->target.nodes.size(), 3u);
  EXPECT_EQ(r->target.nodes[0].op, OpType::Partition);
  EXPECT_EQ(r->target.nodes[0].attrs.at("degree").kind, RuleAttr::Kind::Parameter);
  EXPECT_EQ(r->target.nodes[0].attrs.at("dim").kind, RuleAttr::Kind::Parameter);
  // Moving a Partition through Relu binds the degree and dim from the source ($d, $k).
  const Rule* move = find(g.rules, "relu_partition__partition_relu");
  ASSERT_NE(move, nullptr);
  EXPECT_EQ(move->source.nodes[0].attrs.at("degree").kind, RuleAttr::Kind::Symbol);
}

TEST(Generator, EmitsOnlyVerifiedPrunedDistinctRules) {
  const auto& g = relu_rules();
  ASSERT_EQ(g.rules.rules.size(), g.verifications.size());
  ASSERT_GE(g.rules.rules.size(), 10u);
  for (const auto& v : g.verifications) EXPECT_TRUE(v.ok()) << v.rule << ": " << v.detail;
  EXPECT_GT(g.stats.pruned_common, 0);
  EXPECT_GT(g.stats.pruned_duplicate, 0);
  EXPECT_GT(g.stats.pruned_implied, 0);
  // The cancellation Combine(Partition(x)) = x is the parallel algebra, not a Relu rule: it is
  // found, and the longer rules it implies are not.
  EXPECT_NE(find(g.rules, "replicate_reduce__allreduce"), nullptr);
  EXPECT_EQ(find(g.rules, "combine_relu_partition__relu"), nullptr)
      << "Combine(Relu(Partition(x))) = Relu(x) follows from moving the Partition and cancelling "
         "it";
  // The rule file round-trips through the core's loader.
  const RuleSet back = rules_from_json(rules_to_json(g.rules));
  EXPECT_EQ(back.rules.size(), g.rules.rules.size());
}

TEST(Generator, GeneratedRulesApplyWithTheCoreMatcher) {
  const auto& g = relu_rules();
  const Rule* r = find(g.rules, "relu__combine_relu_partition");
  ASSERT_NE(r, nullptr);
  Graph graph;
  const auto x = graph.add_input("x", {8, 4});
  graph.add({OpType::Relu, {}, "relu"}, {x});
  const auto matches = find_matches(graph, *r);
  ASSERT_EQ(matches.size(), 1u);
  int applied = 0;
  for (const auto& params : parameter_choices(graph, matches[0], {2, 4}))
    if (auto next = apply_substitution(graph, matches[0], params)) {
      ++applied;
      EXPECT_EQ(next->count(OpType::Partition), 1);
      EXPECT_EQ(next->count(OpType::Combine), 1);
    }
  EXPECT_EQ(applied, 4);  // dims 0 and 1, degrees 2 and 4
}

namespace {

const Rule* find_by_ops(const RuleSet& set, const std::vector<OpType>& source,
                        const std::vector<OpType>& target, std::size_t inputs = 0) {
  auto ops = [](const RuleGraph& g) {
    std::vector<OpType> out;
    for (const auto& n : g.nodes) out.push_back(n.op);
    return out;
  };
  for (const auto& r : set.rules)
    if (ops(r.source) == source && ops(r.target) == target &&
        (inputs == 0 || r.inputs.size() == inputs))
      return &r;
  return nullptr;
}

}  // namespace

// Relu(Conv2D(x, w)) = Conv2D[activation=relu](x, w): the source states "activation": "none" (a
// pattern without it would match a convolution that already has an activation, where the rule is
// wrong), and leaves the padding open, so the rule fuses convolutions of every padding.
TEST(Generator, FusesAnActivationIntoConvolutionsOfAnyPadding) {
  const auto g = generate_family(3, "fusion.relu");
  const Rule* fuse =
      find_by_ops(g.rules, {OpType::Conv2D, OpType::Relu}, {OpType::Conv2D}, 2);  // no bias
  ASSERT_NE(fuse, nullptr);
  const auto& conv = fuse->source.nodes[0].attrs;
  ASSERT_TRUE(conv.count("activation"));
  EXPECT_EQ(conv.at("activation").kind, RuleAttr::Kind::Literal);
  EXPECT_EQ(conv.at("activation").literal, "none");
  EXPECT_FALSE(conv.count("padding"));
  EXPECT_EQ(fuse->target.nodes[0].attrs.at("activation").literal, "relu");
  for (const auto& v : g.verifications) EXPECT_TRUE(v.ok()) << v.rule << ": " << v.detail;

  // It applies to a model's 1x1 convolution without padding, and to nothing already fused.
  Graph graph;
  const auto x = graph.add_input("x", {2, 8, 5, 5});
  const auto w = graph.add_weight("w", {16, 8, 1, 1});
  const auto c =
      graph.add({OpType::Conv2D,
                 {{"out_channels", std::int64_t{16}}, {"kernel", std::vector<std::int64_t>{1, 1}}},
                 "conv"},
                {x, w});
  graph.add({OpType::Relu, {}, "relu"}, {{c, 0}});
  EXPECT_EQ(find_matches(graph, *fuse).size(), 1u);
  Graph fused;
  const auto x2 = fused.add_input("x", {2, 8, 5, 5});
  const auto w2 = fused.add_weight("w", {16, 8, 1, 1});
  const auto c2 = fused.add({OpType::Conv2D,
                             {{"out_channels", std::int64_t{16}},
                              {"kernel", std::vector<std::int64_t>{1, 1}},
                              {"activation", std::string("sigmoid")}},
                             "conv"},
                            {x2, w2});
  fused.add({OpType::Relu, {}, "relu"}, {{c2, 0}});
  EXPECT_TRUE(find_matches(fused, *fuse).empty());
}

// Self-attention is parallelised by samples (x split, weights replicated) and by heads (x
// replicated, the four weights split, partial sums reduced), each in one step.
TEST(Generator, FindsSampleAndHeadParallelSelfAttention) {
  const auto g = generate_family(4, "attention");
  using O = OpType;
  const Rule* samples = find_by_ops(g.rules, {O::MultiHeadAttention},
                                    {O::Partition, O::Replicate, O::Replicate, O::Replicate,
                                     O::Replicate, O::MultiHeadAttention, O::Combine});
  const Rule* heads = find_by_ops(g.rules, {O::MultiHeadAttention},
                                  {O::Replicate, O::Partition, O::Partition, O::Partition,
                                   O::Partition, O::MultiHeadAttention, O::Reduce});
  ASSERT_NE(samples, nullptr);
  ASSERT_NE(heads, nullptr);
  EXPECT_EQ(heads->parameters, (std::vector<std::string>{"d"}));
  for (const auto& v : g.verifications) EXPECT_TRUE(v.ok()) << v.rule << ": " << v.detail;
}
