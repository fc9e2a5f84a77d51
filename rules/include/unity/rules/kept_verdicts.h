#pragma once
// Kept verdicts: each rule's verdict as the verifier gave it, kept beside its rule file
// (rules/verdicts/<file>.json for rules/<file>.json) with what that verdict depends on: the rule's
// text, and the prover (the verifier's axioms, its procedure, Z3's version, the options that decide
// a verdict). A rule is proved in a Z3 context of its own, so its verdict depends on nothing else,
// and a verdict kept under the same key is the verdict a new proof gives: the test command proves
// again only the rules whose key changed (and a sample of the rest, to see that this holds), where
// proving all 1,900 shipped rules takes half an hour on two cores.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/rules/proved_scope.h"
#include "unity/core/rules/rule.h"
#include "unity/rules/verifier.h"

namespace unity::rules {

// The revision of the proof procedure: bump it when a change outside the axioms changes what a
// verdict is (the Z3 encoding, the prover's queries, the concrete stage, the bounded fallback).
// Every kept verdict then no longer matches its prover, and the test command proves every rule.
inline constexpr int kProofProcedure = 1;

// What a verdict depends on besides the rule.
struct ProverKey {
  std::string axioms;  // hash of the theory: every axiom and fact as the prover states it
  int procedure = kProofProcedure;
  std::string z3;          // Z3's version
  nlohmann::json options;  // the VerifyOptions that decide a verdict (no threads, no clock)
  bool operator==(const ProverKey&) const = default;
  // Equal but for Z3's version: the same proofs, asked of another solver.
  bool same_but_z3(const ProverKey& other) const;
};
// The key of this build's prover with these options.
ProverKey prover_key(const VerifyOptions& options);

// A hash of the rule as its file states it (its JSON, description included).
std::string rule_text_hash(const Rule& rule);

struct KeptVerdict {
  std::string rule;
  std::string rule_hash;  // rule_text_hash of the rule it was proved for
  Verdict verdict = Verdict::Unknown;
  ProvedScope proved;  // ok() verdicts only
  std::string detail;
  int concrete_cases = 0;
  bool ok() const { return verdict == Verdict::Verified || verdict == Verdict::VerifiedBounded; }
};

// The verdict to keep for the rule named `rule`, whose text hashes to `rule_hash`, from its proof.
KeptVerdict kept_verdict(const std::string& rule, const std::string& rule_hash,
                         const RuleVerification& proof);
// A proof gives the kept verdict again: the same verdict, scope, detail and concrete cases.
bool reproduces(const RuleVerification& proof, const KeptVerdict& kept);
// "verified (all degrees and shapes; 12 concrete cases)", for reports.
std::string describe(const KeptVerdict& kept);

struct KeptVerdicts {
  ProverKey prover;
  std::vector<KeptVerdict> verdicts;  // in the rule file's order
  const KeptVerdict* find(const std::string& rule) const;
};

// rules/verdicts/dense.json for rules/dense.json: a folder of their own, so that `rules/*.json`
// still names the rule files alone.
std::filesystem::path kept_verdicts_path(const std::filesystem::path& rule_file);
// Nothing where the file does not exist; InputError naming the file where it is damaged.
std::optional<KeptVerdicts> load_kept_verdicts(const std::filesystem::path& path);
// One rule a line, so that a change of verdicts reads as a diff of those rules; written atomically.
void save_kept_verdicts(const std::filesystem::path& path, const KeptVerdicts& kept);

}  // namespace unity::rules
