#include "unity/rules/verdict_check.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "unity/core/content_hash.h"
#include "unity/core/errors.h"

namespace unity::rules {
namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The rules whose kept verdict is current, proved again: the `count` whose hash, mixed with the
// seed, comes first.
std::set<std::size_t> sample_of(const std::vector<RuleCheck>& rules, std::size_t count,
                                std::uint64_t seed) {
  std::vector<std::pair<std::uint64_t, std::size_t>> order;
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (rules[i].state == KeptState::Current)
      order.emplace_back(fnv1a64(rules[i].rule_hash + rules[i].rule, seed), i);
  std::sort(order.begin(), order.end());
  std::set<std::size_t> out;
  for (std::size_t k = 0; k < order.size() && k < count; ++k) out.insert(order[k].second);
  return out;
}

std::string keep_command(const std::filesystem::path& file) {
  return fmt::format("`unity rules verify {} --changed --keep`", file.string());
}

// Whether the check passes for the rule, and if not why.
void judge(RuleCheck& c, const Rule& rule, const RuleFileCheck& file, bool keep) {
  const KeptVerdict v = c.verdict();
  if (!v.ok()) {
    c.problem = fmt::format("{}: {}", to_string(v.verdict), v.detail);
  } else if (!v.proved.includes(rule.proved)) {
    c.problem = fmt::format("proved for {}, but its \"verified\" field claims {}",
                            to_string(v.proved), to_string(rule.proved));
  } else if (c.state == KeptState::Current && c.proof && !reproduces(*c.proof, *c.kept)) {
    c.problem = fmt::format(
        "proved again: {}; kept: {}: the kept verdict does not reproduce under the same rule, "
        "axioms, options and Z3",
        describe(v), describe(*c.kept));
  } else if (file.had_kept_verdicts && !keep &&
             (c.state == KeptState::Missing || c.state == KeptState::Changed ||
              c.state == KeptState::ProverDiff)) {
    c.problem =
        fmt::format("{} (proved again: {}); keep the new verdict with {}",
                    c.state == KeptState::Missing   ? "no verdict kept for it"
                    : c.state == KeptState::Changed ? "the rule changed since its verdict was kept"
                                                    : "its verdict was kept under other axioms, "
                                                      "proof procedure or options",
                    describe(v), keep_command(file.file));
  }
  c.ok = c.problem.empty();
}

}  // namespace

std::string_view to_string(KeptState s) {
  switch (s) {
    case KeptState::Current:
      return "current";
    case KeptState::Missing:
      return "missing";
    case KeptState::Changed:
      return "changed";
    case KeptState::ProverDiff:
      return "prover changed";
    case KeptState::Z3Diff:
      break;
  }
  return "z3 changed";
}

KeptVerdict RuleCheck::verdict() const {
  return proof ? kept_verdict(rule, rule_hash, *proof) : *kept;
}

bool VerdictCheckReport::all_ok() const {
  return !rules.empty() && failed == 0 && problems.empty();
}

VerdictCheckReport check_kept_verdicts(const std::vector<std::filesystem::path>& rule_files,
                                       const VerdictCheckOptions& options) {
  VerdictCheckReport report;
  report.prover = prover_key(options.verify);
  const ProverKey& prover = report.prover;
  std::uint64_t seed = options.sample_seed;
  const bool content_seed = seed == 0;
  if (content_seed) seed = kFnv1a64Offset;
  for (std::size_t f = 0; f < rule_files.size(); ++f) {
    RuleFileCheck file;
    file.file = rule_files[f];
    file.verdicts_file = kept_verdicts_path(file.file);
    file.rules = load_rule_file(file.file);
    const auto kept = load_kept_verdicts(file.verdicts_file);
    file.had_kept_verdicts = kept.has_value();
    if (kept && content_seed) seed = fnv1a64(file_text(file.verdicts_file), seed);
    std::set<std::string> names;
    for (const Rule& r : file.rules.rules) {
      names.insert(r.name);
      RuleCheck c;
      c.file = f;
      c.rule = r.name;
      c.rule_hash = rule_text_hash(r);
      const KeptVerdict* k = kept ? kept->find(r.name) : nullptr;
      if (k) c.kept = *k;
      c.state = !k ? KeptState::Missing
                : kept->prover == prover
                    ? (k->rule_hash == c.rule_hash ? KeptState::Current : KeptState::Changed)
                : kept->prover.same_but_z3(prover) ? KeptState::Z3Diff
                                                   : KeptState::ProverDiff;
      report.rules.push_back(std::move(c));
    }
    if (kept && !options.keep)
      for (const auto& v : kept->verdicts)
        if (!names.count(v.rule))
          report.problems.push_back(fmt::format(
              "{}: keeps a verdict for '{}', which {} no longer holds; keep the verdicts anew with "
              "{}",
              file.verdicts_file.string(), v.rule, file.file.string(), keep_command(file.file)));
    report.files.push_back(std::move(file));
  }

  // What to prove: everything asked for, what changed, and the sample.
  std::vector<std::size_t> todo;
  const auto sample =
      options.prove_all ? std::set<std::size_t>{} : sample_of(report.rules, options.sample, seed);
  for (std::size_t i = 0; i < report.rules.size(); ++i) {
    RuleCheck& c = report.rules[i];
    c.sampled = sample.count(i) > 0;
    if (options.prove_all || c.state != KeptState::Current || c.sampled) todo.push_back(i);
  }
  auto rule_of = [&](const RuleCheck& c) -> const Rule& {
    return *report.files[c.file].rules.find(c.rule);
  };
  RuleSet set;
  for (std::size_t i : todo) set.rules.push_back(rule_of(report.rules[i]));
  if (!set.rules.empty()) {
    const VerifyReport proofs = verify_rules(set, options.verify, options.progress);
    for (std::size_t k = 0; k < todo.size(); ++k) report.rules[todo[k]].proof = proofs.rules[k];
    report.seconds = proofs.seconds;
  }
  report.proved = static_cast<int>(todo.size());
  report.sampled = static_cast<int>(sample.size());
  for (auto& c : report.rules) {
    judge(c, rule_of(c), report.files[c.file], options.keep);
    if (!c.ok) ++report.failed;
  }
  return report;
}

void VerdictCheckReport::write_kept_verdicts() const {
  if (!all_ok())
    throw InputError(
        fmt::format("verdicts not kept: {} of {} rules are not verified as their files claim",
                    failed, rules.size()));
  for (std::size_t f = 0; f < files.size(); ++f) {
    KeptVerdicts kept;
    kept.prover = prover;
    for (const auto& c : rules)
      if (c.file == f) kept.verdicts.push_back(c.verdict());
    save_kept_verdicts(files[f].verdicts_file, kept);
  }
}

VerdictCounts VerdictCheckReport::counts() const {
  VerdictCounts counts;
  for (const auto& c : rules) {
    const KeptVerdict v = c.verdict();
    counts.add(v.verdict, v.proved);
  }
  return counts;
}

nlohmann::json to_json(const VerdictCheckReport& report) {
  nlohmann::json rules = nlohmann::json::array();
  VerdictCounts counts;
  for (const auto& c : report.rules) {
    const KeptVerdict v = c.verdict();
    counts.add(v.verdict, v.proved);
    nlohmann::json j = {{"rule", c.rule},
                        {"file", report.files[c.file].file.string()},
                        {"verdict", std::string(to_string(v.verdict))},
                        {"detail", v.detail},
                        {"proved", v.ok() ? to_json(v.proved) : nlohmann::json()},
                        {"concrete_cases", v.concrete_cases},
                        {"kept", std::string(to_string(c.state))},
                        {"proved_now", c.proof.has_value()},
                        {"seconds", c.proof ? c.proof->seconds : 0.0},
                        {"ok", c.ok}};
    if (!c.ok) j["problem"] = c.problem;
    rules.push_back(std::move(j));
  }
  nlohmann::json j = to_json(counts);
  j["rules"] = std::move(rules);
  j["problems"] = report.problems;
  j["proved"] = report.proved;
  j["sampled"] = report.sampled;
  j["failed"] = report.failed;
  j["seconds"] = report.seconds;
  return j;
}

}  // namespace unity::rules
