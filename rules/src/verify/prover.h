#pragma once
// One Z3 context with the theory asserted once; each rule is a query in its own solver scope. Not
// thread-safe: the verifier gives each thread its own Prover.
#include <map>
#include <memory>
#include <string>

#include <z3++.h>

#include "rule_terms.h"
#include "z3_encoding.h"

namespace unity::rules::spec {

enum class ProofResult { Proved, NotProved, Timeout };

struct ProofLimits {
  std::uint64_t effort = 0;  // Z3 resource units (rlimit); 0: none
  int timeout_ms = 0;        // wall clock; 0: none
};

class Prover {
 public:
  Prover();
  // Proves that the rule's target equals its source wherever both are defined, the outputs' shapes
  // agree and the premises hold. `fixed` pins variables to values (the bounded fallback).
  ProofResult prove(const RuleTerms& terms, const std::map<std::string, std::int64_t>& fixed,
                    const ProofLimits& limits);

 private:
  z3::context ctx_;
  Z3Encoder encoder_;
  z3::solver solver_;
};

}  // namespace unity::rules::spec
