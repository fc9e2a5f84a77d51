#pragma once
// `unity rules verify`: formal verification of substitution rules (paper section 4). Each rule is
// first tried on random concrete inputs through the core's own matcher and substitution (a
// difference is a counterexample: refuted), then Z3 proves source == target from the operator
// axioms for all inputs, shapes, degrees and parameters. When that proof is out of reach (the
// per-rule timeout, or arithmetic on symbolic degrees), the degrees are fixed to every value up to
// a bound and each case proved: the rule is then verified "for degrees up to the bound", and the
// report says so.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/rules/proved_scope.h"
#include "unity/core/rules/rule.h"

namespace unity::rules {

enum class Verdict {
  Verified,         // for all inputs and parameters
  VerifiedBounded,  // for all inputs, every degree up to the bound
  Refuted,          // a counterexample was found
  Unknown,          // neither proved nor refuted within the time limit
  Invalid,          // the rule cannot apply anywhere (e.g. a target attribute with no value)
};

std::string_view to_string(Verdict v);

struct RuleVerification {
  std::string rule;
  Verdict verdict = Verdict::Unknown;
  std::string detail;  // the bound, the counterexample, or why unknown/invalid
  ProvedScope proved;  // what the proof covers (ok() only): every degree and arity, or bounds
  // The rule's "verified" field claims more than the proof covers: the verdict is unknown, and
  // `proved` still says what the proof covers (what `unity rules verify --narrow` writes).
  bool claims_more = false;
  int concrete_cases = 0;  // concrete instances where both sides were compared
  double seconds = 0;
  bool ok() const { return verdict == Verdict::Verified || verdict == Verdict::VerifiedBounded; }
};

struct VerifyOptions {
  // Z3's limit per query in its resource units (rlimit), so a verdict is the same on any machine
  // and under any load; a few hundred units per millisecond on the 2-core dev machines.
  std::uint64_t effort = 4'000'000;
  // An optional wall-clock guard beside it (0: none). A clock makes a verdict depend on speed and
  // load, and a proof cut by it changes the context that later proofs in the thread start from:
  // under CI's load that turned a shipped rule's proof for all degrees into one up to 8.
  int timeout_ms = 0;
  int degree_bound = 8;  // bounded fallback: degrees 1..bound
  // A rule with a variadic input ("xs*") is proved once per number of inputs, 1..variadic_bound,
  // or up to what the rule claims where that is more (the theory relates Concats of up to
  // spec::kMaxConcatInputs inputs; past about 12, proofs that unroll a Concat reach the effort
  // limit).
  int variadic_bound = 8;
  bool bounded_fallback = true;
  int concrete_trials = 300;  // random instances tried per rule (stops after `concrete_enough`)
  int concrete_enough = 12;
  std::uint64_t seed = 1;
  int threads = 2;
};

// Verdicts by kind, and the verified ones by what was proved ("degrees up to 8"): the totals of a
// verification and of a check of kept verdicts (verdict_check.h).
struct VerdictCounts {
  int verified = 0, bounded = 0, refuted = 0, unknown = 0, invalid = 0;
  std::map<std::string, int> by_scope;
  // One rule's verdict; `proved` counts where the verdict is verified (bounded or not).
  void add(Verdict verdict, const ProvedScope& proved);
};

struct VerifyReport : VerdictCounts {
  std::vector<RuleVerification> rules;
  double seconds = 0;
  // Every rule verified, for at least what it claims; an empty report proves nothing and is not.
  bool all_ok() const { return !rules.empty() && refuted + unknown + invalid == 0; }
};

// Called after each rule, from the thread that proved it (one call at a time), with how many of
// the rules are done: for progress on long runs.
using VerifyProgress =
    std::function<void(const RuleVerification& rule, std::size_t done, std::size_t total)>;

VerifyReport verify_rules(const RuleSet& rules, const VerifyOptions& options = {},
                          const VerifyProgress& progress = {});
// One rule, from a single thread (tests).
RuleVerification verify_rule(const Rule& rule, const VerifyOptions& options = {});

// "verified", "verified_bounded", "refuted", "unknown", "invalid" and "by_scope".
nlohmann::json to_json(const VerdictCounts& counts);
nlohmann::json to_json(const VerifyReport& report);

}  // namespace unity::rules
