#pragma once
// `unity rules generate`: substitution generation (paper section 4, after TASO). Every PCG up to
// `max_ops` operators of each operator family is enumerated and evaluated on fixed random inputs;
// its fingerprint hashes the output's values and parallel shape (the degree of every dim, the
// replicas). Graphs with equal fingerprints pair into candidate rules, pruned as TASO does: no
// common subgraph, no duplicates up to renaming, none implied by smaller accepted rules. Degrees,
// and dims where the rule holds for all of them, are written as symbols or parameters; every
// candidate is verified (verifier.h) at its most general form first, and only verified rules are
// emitted.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "unity/core/rules/rule.h"
#include "unity/rules/verifier.h"

namespace unity::rules {

struct GenerateOptions {
  int max_ops = 4;  // operators per graph (source or target)
  int threads = 2;
  std::uint64_t seed = 1;
  std::string only;  // only families whose name contains one of these (comma-separated)
  bool prune_implied = true;
  VerifyOptions verify;
};

struct GenerateStats {
  int families = 0;
  std::int64_t graphs_evaluated = 0;  // operator applications tried
  std::int64_t graphs = 0;            // distinct single-output graphs fingerprinted
  std::int64_t classes = 0;           // fingerprints shared by two graphs or more
  std::int64_t candidates = 0;        // pairs proposed
  std::int64_t pruned_common = 0;     // a common subgraph or a common outer operator
  std::int64_t pruned_duplicate = 0;  // the same rule up to renaming
  std::int64_t pruned_implied = 0;    // derivable from smaller accepted rules
  std::int64_t not_verified = 0;      // refuted, unknown or invalid at every level of generality
  std::int64_t verified = 0, verified_bounded = 0;
  std::int64_t parallel_rules = 0;  // emitted rules with a parallel operator
  double enumerate_seconds = 0, verify_seconds = 0, total_seconds = 0;
};

struct GenerateResult {
  RuleSet rules;
  std::vector<RuleVerification> verifications;  // one per emitted rule, same order
  GenerateStats stats;
};

using ProgressFunction = std::function<void(const std::string&)>;

GenerateResult generate_rules(const GenerateOptions& options,
                              const ProgressFunction& progress = {});

}  // namespace unity::rules
