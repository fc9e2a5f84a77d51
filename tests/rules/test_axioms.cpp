// The verifier's axioms and facts hold on concrete values: each is instantiated on random tensors
// (shaped for the operators that read them, sometimes already partitioned or replicated) and checked
// with the evaluator wherever its premise holds.
#include <gtest/gtest.h>

#include "unity/rules/axiom_check.h"

TEST(Axioms, HoldOnRandomConcreteInstances) {
  unity::rules::AxiomCheckOptions o;
  o.max_trials = 600;
  o.enough = 12;
  const auto checks = unity::rules::check_axioms(o);
  ASSERT_EQ(static_cast<int>(checks.size()), unity::rules::axiom_count() + unity::rules::fact_count());
  int untested = 0;
  for (const auto& c : checks) {
    EXPECT_EQ(c.violations, 0) << (c.is_fact ? "fact " : "axiom ") << c.name << ": " << c.counterexample;
    if (c.instances == 0) {
      ++untested;
      std::printf("untested: %s\n", c.name.c_str());
    }
  }
  // Nearly every axiom must meet instances where its premise holds, or the test proves nothing.
  EXPECT_LE(untested * 20, static_cast<int>(checks.size())) << untested << " of " << checks.size();
}

// MultiHeadAttention's query-sequence split (context parallelism) is given on demand to the proofs
// of attention rules, and checked here like the first theory's axioms.
TEST(Axioms, AttentionQuerySequenceSplitHolds) {
  unity::rules::AxiomCheckOptions o;
  o.only = "attention_query_sequence_partition";
  o.max_trials = 600;
  o.enough = 12;
  const auto checks = unity::rules::check_axioms(o);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].violations, 0) << checks[0].counterexample;
  EXPECT_GT(checks[0].instances, 0);
}
