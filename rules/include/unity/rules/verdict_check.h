#pragma once
// Rule files checked against their kept verdicts (kept_verdicts.h): what `unity rules verify` and
// the shipped-rule tests run. A rule is proved again where its kept verdict does not hold for it
// any more (the rule's text, the axioms, the procedure or the options changed, or none was kept),
// where `prove_all` asks for every rule, and for a sample of the rest; a proof that gives another
// verdict than the kept one under the same key shows that verdicts do not reproduce, and fails.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/rules/kept_verdicts.h"
#include "unity/rules/verifier.h"

namespace unity::rules {

struct VerdictCheckOptions {
  VerifyOptions verify;
  bool prove_all = true;  // false: only what changed, and the sample
  // Rules whose kept verdict is current, proved again anyway and compared with it. Which ones is
  // decided by `sample_seed`, or where that is 0 by the kept verdict files' content: the same rules
  // for the same tree, others once any verdict changes.
  std::size_t sample = 0;
  std::uint64_t sample_seed = 0;
  // A rule file with kept verdicts must have one, current, for each of its rules (a kept verdict
  // that no longer matches its rule fails); a file without any is only proved. `keep` lifts that:
  // the check is run to write the kept verdicts anew.
  bool keep = false;
  VerifyProgress progress;  // after each proof
};

enum class KeptState {
  Current,     // kept for this rule's text under this prover
  Missing,     // no kept verdict for the rule (or no kept verdicts for the file)
  Changed,     // the rule's text changed since its verdict was kept
  ProverDiff,  // kept under other axioms, procedure or options
  Z3Diff,      // kept under the same prover but another version of Z3
};
std::string_view to_string(KeptState s);

struct RuleCheck {
  std::size_t file = 0;  // into VerdictCheckReport::files
  std::string rule;
  std::string rule_hash;
  KeptState state = KeptState::Missing;
  std::optional<KeptVerdict> kept;        // as the file holds it, where it holds one
  std::optional<RuleVerification> proof;  // where proved again
  bool sampled = false;                   // proved again although its kept verdict is current
  bool ok = false;
  std::string problem;  // why not ok
  // What the check concludes for this rule: the proof where there is one, else the kept verdict.
  KeptVerdict verdict() const;
};

struct RuleFileCheck {
  std::filesystem::path file;
  std::filesystem::path verdicts_file;
  bool had_kept_verdicts = false;
  RuleSet rules;
};

struct VerdictCheckReport {
  ProverKey prover;  // the prover the proofs ran under
  std::vector<RuleFileCheck> files;
  std::vector<RuleCheck> rules;       // every rule of every file, in order
  std::vector<std::string> problems;  // of the files: kept verdicts of rules no longer there
  int proved = 0, sampled = 0, failed = 0;
  double seconds = 0;  // proving
  bool all_ok() const;
  VerdictCounts counts() const;  // of what the check concludes for each rule
  // Writes each file's kept verdicts from this check (after a check with `keep`): InputError, and
  // nothing written, unless every rule is verified as its file claims.
  void write_kept_verdicts() const;
};

VerdictCheckReport check_kept_verdicts(const std::vector<std::filesystem::path>& rule_files,
                                       const VerdictCheckOptions& options);

nlohmann::json to_json(const VerdictCheckReport& report);

}  // namespace unity::rules
