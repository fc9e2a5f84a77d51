// Rule generation and verification, end to end (paper section 4: "the substitution generation and
// verification process takes a total of 30 minutes"). Prints what was enumerated, pruned and kept,
// how many rules have parallel operators, and the time of each phase; then verifies the generated
// file again from scratch, as `unity rules verify` would.
//   build/tests/bench/unity_bench_rules [max_ops=4] [out.json] [threads=2]
#include <chrono>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "unity/core/rules/rule.h"
#include "unity/rules/generator.h"
#include "unity/rules/verifier.h"

int main(int argc, char** argv) {
  using namespace unity;
  const int max_ops = argc > 1 ? std::atoi(argv[1]) : 4;
  const std::string out = argc > 2 ? argv[2] : "";
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;

  rules::GenerateOptions o;
  o.max_ops = max_ops;
  o.threads = threads;
  o.verify.effort = 2'000'000;
  // The concrete stage as thorough as `unity rules verify`'s: with fewer instances a rule whose
  // target is undefined for rare input layouts (both operands partial sums) slipped through.
  const auto started = std::chrono::steady_clock::now();
  const auto g =
      rules::generate_rules(o, [](const std::string& s) { fmt::print(stderr, "  {}\n", s); });
  const auto& s = g.stats;
  if (!out.empty()) std::ofstream(out) << rules_to_json(g.rules).dump(1) << "\n";

  // Independent re-verification of everything generated.
  rules::VerifyOptions v;
  v.threads = threads;
  const auto report = rules::verify_rules(g.rules, v);
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  fmt::print("rule generation, max {} operators per graph, {} threads\n\n", max_ops, threads);
  fmt::print("| phase | count | seconds |\n|---|---:|---:|\n");
  fmt::print("| operator families | {} | |\n", s.families);
  fmt::print("| operator applications evaluated | {} | |\n", s.graphs_evaluated);
  fmt::print("| single-output graphs fingerprinted | {} | {:.1f} |\n", s.graphs,
             s.enumerate_seconds);
  fmt::print("| fingerprint classes (2+ graphs) | {} | |\n", s.classes);
  fmt::print("| candidate pairs | {} | |\n", s.candidates);
  fmt::print("| pruned: common subgraph or outer operator | {} | |\n", s.pruned_common);
  fmt::print("| pruned: duplicate up to renaming | {} | |\n", s.pruned_duplicate);
  fmt::print("| pruned: implied by smaller rules | {} | |\n", s.pruned_implied);
  fmt::print("| not verified (refuted or unknown at every generality) | {} | |\n", s.not_verified);
  fmt::print("| rules kept (verified) | {} | {:.1f} |\n", g.rules.rules.size(), s.verify_seconds);
  fmt::print("| of which with parallel operators | {} | |\n", s.parallel_rules);
  fmt::print("| verified for all degrees / for degrees up to 8 | {} / {} | |\n", s.verified,
             s.verified_bounded);
  fmt::print("| generation total | | {:.1f} |\n", s.total_seconds);
  fmt::print(
      "| re-verification: verified / bounded / refuted / unknown / invalid | {} / {} / {} / {} / "
      "{} | {:.1f} |\n",
      report.verified, report.bounded, report.refuted, report.unknown, report.invalid,
      report.seconds);
  fmt::print("| generation + verification | | {:.1f} ({:.1f} min) |\n", total, total / 60);
  return 0;
}
