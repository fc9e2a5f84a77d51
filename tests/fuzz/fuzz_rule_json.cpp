// Fuzzes the rule JSON loader (`--rules FILE`, `unity rules verify FILE`) and what the search does
// with an accepted rule: matching it in a graph of many operator kinds, choosing its parameters and
// applying it. An application either gives a valid graph or nothing; it never breaks the graph.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "fuzz_contract.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/rules/rule.h"
#include "unity/core/rules/substitution.h"

namespace {

// The operators rules are written for: dense layers, element-wise ops, a fork joined by Add, a
// Concat, normalisation, softmax, attention, and parallel operators already in place.
unity::Graph rule_target_graph() {
  using unity::OpType;
  unity::Graph g;
  unity::GraphBuilder b(g);
  auto x = b.input("x", {8, 16});
  auto h = b.linear(x, 16, "fc1", /*bias=*/false);
  h = b.relu(h, "relu1");
  auto left = b.linear(h, 16, "left", /*bias=*/false);
  auto right = b.tanh(h, "right");
  h = b.add(left, right, "join");
  h = b.concat({h, b.gelu(h, "gelu")}, 1, "cat");
  h = b.layer_norm(h, "ln");
  auto p = b.partition(h, 0, 2, "part");
  p = b.relu(p, "relu_part");
  h = b.combine(p, 0, 2, "combine");
  auto seq = b.reshape(h, {2, 4, 32}, "seq");
  auto att = b.multi_head_attention(seq, seq, seq, 2, "att");
  h = b.reshape(att, {8, 32}, "flat");
  h = b.matmul(h, b.weight("w2", {32, 10}), "fc2");
  b.softmax(h, "softmax");
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  const auto j = unity::fuzz::parse_json(data, size);
  if (!j) return 0;
  std::optional<unity::RuleSet> rules;
  unity::fuzz::expect_user_errors_only([&] { rules = unity::rules_from_json(*j, "fuzz"); });
  if (!rules) return 0;
  // An accepted rule set writes back into a file that loads again (`unity rules generate -o`).
  (void)unity::rules_from_json(unity::rules_to_json(*rules), "round trip");

  static const unity::Graph graph = rule_target_graph();
  // Bounded, so that one input cannot make a run slow: a few rules, matches and parameter choices.
  constexpr std::size_t kRules = 8, kMatches = 4, kChoices = 4;
  std::vector<unity::Graph> rewritten;
  for (std::size_t r = 0; r < rules->rules.size() && r < kRules; ++r) {
    unity::fuzz::expect_user_errors_only([&] {
      const auto matches = unity::find_matches(graph, rules->rules[r]);
      for (std::size_t m = 0; m < matches.size() && m < kMatches; ++m) {
        const auto choices = unity::parameter_choices(graph, matches[m], {1, 2, 4});
        for (std::size_t c = 0; c < choices.size() && c < kChoices; ++c) {
          if (auto g = unity::apply_substitution(graph, matches[m], choices[c]))
            rewritten.push_back(std::move(*g));
        }
      }
    });
  }
  // Outside the user-error handler: a rewrite that breaks the graph is the search's bug.
  for (const auto& g : rewritten) g.validate();
  return 0;
}
