#include "unity/rules/verifier.h"

#include <chrono>
#include <mutex>

#include <fmt/format.h>

#include "../parallel_for.h"
#include "concrete_check.h"
#include "prover.h"
#include "rule_terms.h"
#include "theory.h"
#include "variadic_expansion.h"
#include "verify_internal.h"

namespace unity::rules {
namespace {

using Clock = std::chrono::steady_clock;

// Every assignment of values to the degree variables: symbols from 1, parameters (the search's
// degrees) from 2, up to the bound.
std::vector<std::map<std::string, std::int64_t>> degree_cases(const std::vector<std::string>& vars,
                                                              int bound) {
  std::vector<std::map<std::string, std::int64_t>> out{{}};
  for (const auto& v : vars) {
    std::vector<std::map<std::string, std::int64_t>> next;
    const std::int64_t first = v.rfind("param.", 0) == 0 ? 2 : 1;
    for (const auto& partial : out)
      for (std::int64_t d = first; d <= bound; ++d) {
        auto m = partial;
        m[v] = d;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

// Concrete check, then the symbolic proof, then the bounded one, for one fixed-arity rule.
struct Attempt {
  Verdict verdict = Verdict::Unknown;
  std::string detail;
  int concrete_cases = 0;
};

Attempt attempt(const Rule& rule, const Rule& fixed, const VerifyOptions& o, spec::Prover& prover) {
  Attempt a;
  const spec::RuleTerms terms = spec::rule_terms(fixed);
  if (!terms.error.empty()) return {Verdict::Invalid, terms.error, 0};
  spec::ConcreteOptions co;
  co.seed = o.seed;
  co.trials = o.concrete_trials;
  co.enough = o.concrete_enough;
  const auto concrete = spec::concrete_check(rule, fixed, terms, co);
  a.concrete_cases = concrete.compared;
  if (concrete.refuted) return {Verdict::Refuted, concrete.counterexample, a.concrete_cases};

  // A rule written with a bounded proof ("verified": "degrees up to 8") is checked for that claim
  // first: its symbolic proof failed when it was generated and would mostly spend the limit again.
  const bool can_bound = o.bounded_fallback && !terms.degree_vars.empty();
  const bool claims_bound = can_bound && rule.proved.max_degree.has_value();
  auto bounded = [&]() -> bool {
    const auto cases = degree_cases(terms.degree_vars, o.degree_bound);
    if (cases.empty() || cases.size() > 4096) return false;
    // The cases share the limit of a few symbolic proofs.
    const spec::ProofLimits per_case{std::max<std::uint64_t>(200'000, 4 * o.effort / cases.size()),
                                     o.timeout_ms};
    for (const auto& c : cases)
      if (prover.prove(terms, c, per_case) != spec::ProofResult::Proved) return false;
    return true;
  };
  const Attempt proved_bounded{Verdict::VerifiedBounded,
                               fmt::format("degrees up to {}", o.degree_bound), a.concrete_cases};
  if (claims_bound && bounded()) return proved_bounded;
  const auto symbolic = prover.prove(terms, {}, {o.effort, o.timeout_ms});
  if (symbolic == spec::ProofResult::Proved)
    return {Verdict::Verified, "all degrees and shapes", a.concrete_cases};
  if (can_bound && !claims_bound && bounded()) return proved_bounded;
  a.detail = symbolic != spec::ProofResult::Timeout ? "not provable from the operator axioms"
             : o.timeout_ms > 0
                 ? fmt::format("Z3 reached its limit ({} units, {} ms) or memory limit", o.effort,
                               o.timeout_ms)
                 : fmt::format("Z3 reached its limit ({} units) or memory limit", o.effort);
  return a;
}

}  // namespace

RuleVerification verify_with(const Rule& rule, const VerifyOptions& o, spec::Prover& prover) {
  const auto started = Clock::now();
  RuleVerification r;
  r.rule = rule.name;
  if (!spec::is_variadic(rule)) {
    const Attempt a = attempt(rule, rule, o, prover);
    r.verdict = a.verdict;
    r.detail = a.detail;
    r.concrete_cases = a.concrete_cases;
    if (r.verdict == Verdict::VerifiedBounded) r.proved.max_degree = o.degree_bound;
  } else {
    // One proof per arity: the verdict is bounded by the arity, and by the degrees where any is.
    r.verdict = Verdict::VerifiedBounded;
    bool degrees_bounded = false;
    // Up to the bound, or further where the rule claims more (the theory's Concats stop at
    // spec::kMaxConcatInputs): a claim is checked, never cut to the default.
    const int bound = rule.proved.max_variadic
                          ? std::max(o.variadic_bound,
                                     std::min(*rule.proved.max_variadic, spec::kMaxConcatInputs))
                          : o.variadic_bound;
    for (int n = 1; n <= bound && r.ok(); ++n) {
      const Attempt a = attempt(rule, spec::expand_variadic(rule, n), o, prover);
      r.concrete_cases += a.concrete_cases;
      if (a.verdict == Verdict::VerifiedBounded) degrees_bounded = true;
      if (a.verdict != Verdict::Verified && a.verdict != Verdict::VerifiedBounded) {
        r.verdict = a.verdict;
        r.detail = fmt::format("with {} variadic inputs: {}", n, a.detail);
      }
    }
    if (r.ok()) {
      if (degrees_bounded) r.proved.max_degree = o.degree_bound;
      r.proved.max_variadic = bound;
      r.detail = to_string(r.proved);
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return r;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::Verified:
      return "verified";
    case Verdict::VerifiedBounded:
      return "verified-bounded";
    case Verdict::Refuted:
      return "refuted";
    case Verdict::Unknown:
      return "unknown";
    default:
      return "invalid";
  }
}

RuleVerification verify_rule(const Rule& rule, const VerifyOptions& options) {
  spec::Prover prover;
  RuleVerification r = verify_with(rule, options, prover);
  // A proof that covers less than the rule claims (a claim from generation, or one the effort
  // misses) gets a second try at four times the effort, in a fresh context again.
  if (r.verdict == Verdict::Unknown || (r.ok() && !r.proved.includes(rule.proved))) {
    spec::Prover fresh;
    VerifyOptions retry = options;
    retry.effort *= 4;
    RuleVerification again = verify_with(rule, retry, fresh);
    again.seconds += r.seconds;
    if (!r.ok() || (again.ok() && again.proved.includes(r.proved))) return again;
    r.seconds = again.seconds;
  }
  return r;
}

VerifyReport verify_rules(const RuleSet& rules, const VerifyOptions& options,
                          const VerifyProgress& progress) {
  const auto started = Clock::now();
  VerifyReport report;
  report.rules.resize(rules.rules.size());
  const int threads =
      std::max(1, std::min<int>(options.threads, static_cast<int>(rules.rules.size())));
  // Each rule is proved in a Z3 context of its own: E-matching finds a proof or not depending on
  // the terms and instances its context already holds, so a context shared with other rules made a
  // verdict depend on which rules came before it (the file list, the thread count). With its own
  // context and a resource limit (no clock), a rule's verdict depends on the rule, the axioms, the
  // options and Z3's version alone, and the threads may take the rules in any order.
  std::mutex progress_lock;
  std::size_t done = 0;
  parallel_for(rules.rules.size(), threads, [&](std::size_t i) {
    report.rules[i] = verify_rule(rules.rules[i], options);
    std::lock_guard<std::mutex> lock(progress_lock);
    ++done;
    if (progress) progress(report.rules[i], done, rules.rules.size());
  });
  // A rule file's "verified" field is what the matcher trusts: a proof that covers less fails it.
  for (std::size_t i = 0; i < rules.rules.size(); ++i) {
    RuleVerification& r = report.rules[i];
    const ProvedScope& claimed = rules.rules[i].proved;
    if (r.ok() && !r.proved.includes(claimed)) {
      r.verdict = Verdict::Unknown;
      r.claims_more = true;
      r.detail = fmt::format("proved for {}, but its \"verified\" field claims {}",
                             to_string(r.proved), to_string(claimed));
    }
    report.add(r.verdict, r.proved);
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return report;
}

void VerdictCounts::add(Verdict verdict, const ProvedScope& proved) {
  switch (verdict) {
    case Verdict::Verified:
      ++verified;
      break;
    case Verdict::VerifiedBounded:
      ++bounded;
      break;
    case Verdict::Refuted:
      ++refuted;
      break;
    case Verdict::Unknown:
      ++unknown;
      break;
    case Verdict::Invalid:
      ++invalid;
      break;
  }
  if (verdict == Verdict::Verified || verdict == Verdict::VerifiedBounded)
    ++by_scope[to_string(proved)];
}

nlohmann::json to_json(const VerdictCounts& counts) {
  return {{"verified", counts.verified}, {"verified_bounded", counts.bounded},
          {"refuted", counts.refuted},   {"unknown", counts.unknown},
          {"invalid", counts.invalid},   {"by_scope", counts.by_scope}};
}

nlohmann::json to_json(const VerifyReport& report) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : report.rules)
    rules.push_back({{"rule", r.rule},
                     {"verdict", std::string(to_string(r.verdict))},
                     {"detail", r.detail},
                     {"proved", r.ok() ? to_json(r.proved) : nlohmann::json()},
                     {"concrete_cases", r.concrete_cases},
                     {"seconds", r.seconds}});
  nlohmann::json j = to_json(static_cast<const VerdictCounts&>(report));
  j["rules"] = std::move(rules);
  j["seconds"] = report.seconds;
  return j;
}

}  // namespace unity::rules
