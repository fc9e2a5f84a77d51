#pragma once
// Tests the verifier's theory against the evaluator: every axiom and fact is instantiated on random
// concrete values and must hold wherever its premise does. An axiom that fails here is unsound, and a
// proof using it would verify a wrong rule.
#include <cstdint>
#include <string>
#include <vector>

namespace unity::rules {

struct AxiomCheck {
  std::string name;
  bool is_fact = false;
  int trials = 0;
  int instances = 0;       // trials where the premise held
  int violations = 0;
  std::string counterexample;  // the first violation, in words
};

struct AxiomCheckOptions {
  std::uint64_t seed = 1;
  int max_trials = 2000;  // per axiom
  int enough = 40;        // stop an axiom after this many instances
  std::string only;       // check only axioms and facts whose name contains this
};

std::vector<AxiomCheck> check_axioms(const AxiomCheckOptions& options = {});
int axiom_count();
int fact_count();

}  // namespace unity::rules
