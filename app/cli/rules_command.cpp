// `unity rules generate|verify|axioms`: substitution generation and formal verification (paper
// section 4). `verify` exits with 1 when any rule is not verified, so a rule file can gate a build.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "table_printer.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/rules/rule.h"
#include "unity/rules/axiom_check.h"
#include "unity/rules/generator.h"
#include "unity/rules/verdict_check.h"
#include "unity/rules/verifier.h"

namespace unity::cli {
namespace {

// No clock by default: VerifyOptions::timeout_ms says why.
constexpr const char* kTimeoutHelp =
    "Wall-clock guard per proof, ms (default none: verdicts then depend on the machine's speed)";

struct GenerateArgs {
  int max_ops = 4;
  std::string out;
  int threads = 2;
  std::string only;
  std::uint64_t effort = 2'000'000;
  int timeout_ms = rules::VerifyOptions{}.timeout_ms;
  bool json = false;
  bool quiet = false;
};

struct VerifyArgs {
  std::vector<std::string> files;
  bool json = false;
  std::uint64_t effort = 4'000'000;
  int timeout_ms = rules::VerifyOptions{}.timeout_ms;
  int degree_bound = 8;
  int variadic_bound = rules::VerifyOptions{}.variadic_bound;
  int threads = 2;
  bool all = false;
  bool changed = false;
  std::size_t sample = 0;
  std::uint64_t sample_seed = 0;
  bool keep = false;
  bool narrow = false;
};

void run_generate(const GenerateArgs& a) {
  if (a.max_ops < 1 || a.max_ops > 6)
    throw InputError(fmt::format("--max-ops must be 1..6, got {}", a.max_ops));
  const auto dir = std::filesystem::path(a.out).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir))
    throw InputError(fmt::format("cannot write '{}': no directory '{}'", a.out, dir.string()));
  rules::GenerateOptions o;
  o.max_ops = a.max_ops;
  o.threads = a.threads;
  o.only = a.only;
  o.verify.effort = a.effort;
  o.verify.timeout_ms = a.timeout_ms;
  o.verify.threads = a.threads;
  // The concrete stage as thorough as `unity rules verify`'s: with fewer instances a rule whose
  // target is undefined for rare input layouts (both operands partial sums) slipped through.
  const auto result = rules::generate_rules(o, [&](const std::string& s) {
    if (!a.quiet && !a.json) fmt::print(stderr, "{}\n", s);
  });
  if (result.rules.rules.empty()) throw InputError("no rule was generated (is --only too narrow?)");
  write_text_file_atomic(a.out, rules_to_json(result.rules).dump(1) + "\n");
  const auto& s = result.stats;
  nlohmann::json j = {{"file", a.out},
                      {"max_ops", a.max_ops},
                      {"families", s.families},
                      {"operator_applications", s.graphs_evaluated},
                      {"graphs", s.graphs},
                      {"fingerprint_classes", s.classes},
                      {"candidates", s.candidates},
                      {"pruned_common_subgraph", s.pruned_common},
                      {"pruned_duplicate", s.pruned_duplicate},
                      {"pruned_implied", s.pruned_implied},
                      {"not_verified", s.not_verified},
                      {"rules", result.rules.rules.size()},
                      {"verified", s.verified},
                      {"verified_bounded", s.verified_bounded},
                      {"parallel_rules", s.parallel_rules},
                      {"enumerate_seconds", s.enumerate_seconds},
                      {"verify_seconds", s.verify_seconds},
                      {"seconds", s.total_seconds}};
  if (a.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print(
      "{} rules written to {} ({} with parallel operators; {} verified for all degrees, {} for "
      "degrees up to 8)\n",
      result.rules.rules.size(), a.out, s.parallel_rules, s.verified, s.verified_bounded);
  fmt::print(
      "{} families, {} graphs fingerprinted, {} candidates: {} with a common subgraph, {} "
      "duplicates, "
      "{} implied by smaller rules, {} not verified\n",
      s.families, s.graphs, s.candidates, s.pruned_common, s.pruned_duplicate, s.pruned_implied,
      s.not_verified);
  fmt::print("enumeration {:.1f} s, verification {:.1f} s, total {:.1f} s\n", s.enumerate_seconds,
             s.verify_seconds, s.total_seconds);
}

// Progress on stderr for long runs: a line every 10 s, none for a few quick proofs.
rules::VerifyProgress verify_progress() {
  const auto started = std::chrono::steady_clock::now();
  auto last = started;
  return
      [started, last](const rules::RuleVerification&, std::size_t done, std::size_t total) mutable {
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::seconds(10) && done < total) return;
        if (now - started < std::chrono::seconds(10)) return;
        last = now;
        fmt::print(stderr, "verify: {} of {} rules proved ({:.0f} s)\n", done, total,
                   std::chrono::duration<double>(now - started).count());
      };
}

// Rewrites each file whose rules claim more than their proofs cover, with the claims narrowed to
// the proofs ("verified": "degrees up to 8"). A rule that is not proved at all stays as it is.
void narrow_claims(const rules::VerdictCheckReport& report) {
  for (std::size_t f = 0; f < report.files.size(); ++f) {
    RuleSet narrowed = report.files[f].rules;
    int changed = 0;
    for (const auto& c : report.rules) {
      if (c.file != f || !c.proof || !c.proof->claims_more) continue;
      for (auto& r : narrowed.rules)
        if (r.name == c.rule) {
          r.proved = c.proof->proved;
          r.verified = to_string(r.proved);
          fmt::print(stderr, "narrowed '{}' to \"{}\"\n", r.name, r.verified);
          ++changed;
        }
    }
    if (changed == 0) continue;
    write_text_file_atomic(report.files[f].file, rules_to_json(narrowed).dump(1) + "\n");
    fmt::print(stderr, "{}: {} claims narrowed; verify the file again to keep its verdicts\n",
               report.files[f].file.string(), changed);
  }
}

void run_verify(const VerifyArgs& a) {
  if (a.keep && a.narrow)
    throw InputError("--narrow changes the rules --keep would keep verdicts for: run them apart");
  if (a.keep && a.timeout_ms > 0)
    throw InputError(
        "--keep keeps verdicts that depend on the rules alone: leave out --timeout-ms, whose clock "
        "makes them depend on the machine");
  std::vector<std::filesystem::path> files(a.files.begin(), a.files.end());
  rules::VerdictCheckOptions o;
  o.verify.effort = a.effort;
  o.verify.timeout_ms = a.timeout_ms;
  o.verify.degree_bound = a.degree_bound;
  o.verify.variadic_bound = a.variadic_bound;
  o.verify.threads = a.threads;
  o.prove_all = !a.changed;
  o.sample = a.sample;
  o.sample_seed = a.sample_seed;
  o.keep = a.keep;
  o.progress = verify_progress();
  const auto report = rules::check_kept_verdicts(files, o);
  if (report.rules.empty())
    throw InputError(fmt::format("no rules to verify: {} holds none",
                                 a.files.size() == 1 ? a.files[0] : "none of the files"));
  if (a.json) {
    fmt::print("{}\n", rules::to_json(report).dump(2));
  } else {
    Table table({"rule", "verdict", "kept verdict", "seconds", "detail"});
    for (const auto& c : report.rules) {
      const auto v = c.verdict();
      if (a.all || !c.ok || v.verdict == rules::Verdict::VerifiedBounded)
        table.add({c.rule, std::string(rules::to_string(v.verdict)),
                   std::string(rules::to_string(c.state)),
                   c.proof ? fmt::format("{:.2f}", c.proof->seconds) : "kept",
                   c.ok ? v.detail : c.problem});
    }
    table.print();
    const rules::VerdictCounts n = report.counts();
    fmt::print(
        "{} rules: {} verified, {} verified within a bound (degrees or variadic inputs), {} "
        "refuted, {} unknown, {} invalid; {} proved now ({} of them a sample of current kept "
        "verdicts, {:.1f} s), {} kept verdicts trusted\n",
        report.rules.size(), n.verified, n.bounded, n.refuted, n.unknown, n.invalid, report.proved,
        report.sampled, report.seconds, report.rules.size() - report.proved);
    for (const auto& [scope, count] : n.by_scope) fmt::print("  proved for {}: {}\n", scope, count);
    for (const auto& p : report.problems) fmt::print(stderr, "{}\n", p);
  }
  if (a.narrow) narrow_claims(report);
  if (!report.all_ok())
    throw InputError(
        fmt::format("{} of {} rules are not verified as their files and kept "
                    "verdicts say{}",
                    report.failed, report.rules.size(),
                    report.problems.empty() ? "" : ", and kept verdicts are stale"));
  if (a.keep) {
    report.write_kept_verdicts();
    for (const auto& f : report.files)
      fmt::print(stderr, "kept {} verdicts in {}\n", f.rules.rules.size(),
                 f.verdicts_file.string());
  }
}

}  // namespace

void add_rules_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "rules", "Generate and formally verify substitution rules (paper section 4)");
  cmd->require_subcommand(1);

  auto g = std::make_shared<GenerateArgs>();
  auto* gen = cmd->add_subcommand(
      "generate", "Enumerate PCGs, pair equal fingerprints, verify, write the rules");
  gen->add_option("--max-ops", g->max_ops, "Operators per graph (default 4)");
  gen->add_option("-o,--out", g->out, "Rule file to write")->required();
  gen->add_option("--threads", g->threads, "Worker threads (default 2)");
  gen->add_option("--only", g->only,
                  "Only operator families whose name contains this (e.g. linear)");
  gen->add_option(
      "--effort", g->effort,
      "Z3 resource limit per proof (rlimit units, a few hundred per ms; default 2,000,000)");
  gen->add_option("--timeout-ms", g->timeout_ms, kTimeoutHelp);
  gen->add_flag("--json", g->json, "Print the statistics as JSON");
  gen->add_flag("--quiet", g->quiet, "No progress on stderr");
  gen->callback([g] { run_generate(*g); });

  auto v = std::make_shared<VerifyArgs>();
  auto* ver = cmd->add_subcommand(
      "verify", "Verify rule files with Z3: verified, refuted (with a counterexample) or unknown");
  ver->add_option("files", v->files, "Rule files")->required()->check(CLI::ExistingFile);
  ver->add_flag("--json", v->json, "Print the report as JSON");
  ver->add_flag("--all", v->all, "List every rule, not only those that need attention");
  ver->add_flag("--changed", v->changed,
                "Prove only the rules whose kept verdict (rules/verdicts/FILE beside each file) "
                "is missing or no longer matches the rule, the axioms or Z3 (and --sample more)");
  ver->add_option("--sample", v->sample,
                  "With --changed: also prove this many rules whose kept verdict is current, and "
                  "fail where a proof gives another verdict");
  ver->add_option("--sample-seed", v->sample_seed,
                  "Which rules --sample takes (default: from the kept verdicts' content)");
  ver->add_flag("--narrow", v->narrow,
                "Rewrite each file whose rules claim more than their proofs cover (\"verified\": "
                "\"degrees up to 8\" where only that is proved), in the format `rules generate` "
                "writes");
  ver->add_flag("--keep", v->keep,
                "Write each file's kept verdicts (rules/verdicts/FILE) from this run; nothing is "
                "written unless every rule is verified as its file claims");
  ver->add_option("--effort", v->effort,
                  "Z3 resource limit per proof: the same verdict on any machine (rlimit units, "
                  "a few hundred per ms; default 4,000,000)");
  ver->add_option("--timeout-ms", v->timeout_ms, kTimeoutHelp);
  ver->add_option("--degree-bound", v->degree_bound,
                  "Bounded fallback: prove every degree up to this (default 8)");
  ver->add_option("--variadic-bound", v->variadic_bound,
                  "Prove a rule with a variadic input for 1 to this many inputs (default 8)");
  ver->add_option("--threads", v->threads, "Worker threads (default 2)");
  ver->callback([v] { run_verify(*v); });

  auto trials = std::make_shared<int>(2000);
  auto* ax = cmd->add_subcommand(
      "axioms", "Check every operator axiom of the verifier on random concrete tensors");
  ax->add_option("--trials", *trials, "Random instances per axiom (default 2000)");
  ax->callback([trials] {
    rules::AxiomCheckOptions o;
    o.max_trials = *trials;
    o.enough = std::max(1, *trials / 10);
    int bad = 0, untested = 0;
    Table table({"axiom or fact", "instances", "violations", "counterexample"});
    for (const auto& c : rules::check_axioms(o)) {
      if (c.violations) ++bad;
      if (c.instances == 0) ++untested;
      if (c.violations || c.instances == 0)
        table.add(
            {c.name, std::to_string(c.instances), std::to_string(c.violations), c.counterexample});
    }
    table.print();
    fmt::print("{} axioms and {} facts checked: {} violated, {} without an instance\n",
               rules::axiom_count(), rules::fact_count(), bad, untested);
    if (bad) throw InputError(fmt::format("{} axioms or facts are violated", bad));
  });
}

}  // namespace unity::cli
