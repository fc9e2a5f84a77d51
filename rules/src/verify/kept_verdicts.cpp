#include "unity/rules/kept_verdicts.h"

#include <algorithm>

#include <fmt/format.h>

#include "theory.h"
#include "unity/core/content_hash.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/rules/z3_info.h"

namespace unity::rules {
namespace {

constexpr const char* kFormat = "unity-rule-verdicts";

std::string text_of(const spec::E& e) { return e.empty() ? "-" : spec::to_string(e.ptr()); }

std::string axiom_text(const spec::Axiom& a) {
  return fmt::format("axiom {} {} {} = {} if {} on {}\n", a.name, static_cast<int>(a.mode),
                     text_of(a.lhs), text_of(a.rhs), text_of(a.guard), text_of(a.trigger));
}

std::string fact_text(const spec::Fact& f) {
  return fmt::format("fact {} {} on {} {}\n", f.name, text_of(f.holds), text_of(f.trigger),
                     text_of(f.trigger2));
}

std::string theory_text(const spec::Theory& t) {
  std::string text;
  for (const auto& a : t.axioms) text += axiom_text(a);
  for (const auto& f : t.facts) text += fact_text(f);
  return text;
}

// Every axiom and fact every proof has, as text: a change to any of them changes the hash. The
// axioms of an operator only the proofs of its own rules have (operator_theory) are part of those
// rules' hashes instead (rule_text_hash), so that adding an operator proves only its rules again.
std::string theory_text() {
  std::string text = theory_text(spec::theory());
  for (const auto* extra : {&spec::concat_peel_axioms(), &spec::concat_pieces_axioms()})
    for (const auto& a : *extra) text += axiom_text(a);
  return text;
}

std::optional<Verdict> verdict_from_string(std::string_view s) {
  for (auto v : {Verdict::Verified, Verdict::VerifiedBounded, Verdict::Refuted, Verdict::Unknown,
                 Verdict::Invalid})
    if (to_string(v) == s) return v;
  return std::nullopt;
}

nlohmann::json to_json(const ProverKey& k) {
  return {{"axioms", k.axioms}, {"procedure", k.procedure}, {"z3", k.z3}, {"options", k.options}};
}

nlohmann::json to_json(const KeptVerdict& v) {
  nlohmann::json j = {
      {"rule", v.rule}, {"hash", v.rule_hash}, {"verdict", std::string(to_string(v.verdict))}};
  if (v.ok()) j["proved"] = to_string(v.proved);
  j["concrete_cases"] = v.concrete_cases;
  j["detail"] = v.detail;
  return j;
}

std::string string_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string())
    throw InputError(fmt::format("{}: field '{}' must be a string", where, key));
  return j[key].get<std::string>();
}

KeptVerdict kept_from_json(const nlohmann::json& j, const std::string& where) {
  KeptVerdict v;
  v.rule = string_field(j, "rule", where);
  v.rule_hash = string_field(j, "hash", where);
  const std::string verdict = string_field(j, "verdict", where);
  const auto parsed = verdict_from_string(verdict);
  if (!parsed) throw InputError(fmt::format("{}: unknown verdict '{}'", where, verdict));
  v.verdict = *parsed;
  if (v.ok()) {
    const auto scope = parse_proved_scope(string_field(j, "proved", where));
    if (!scope) throw InputError(fmt::format("{}: field 'proved' states no scope", where));
    v.proved = *scope;
  }
  v.concrete_cases = json_integer_or<int>(j, "concrete_cases", 0, where);
  v.detail = string_field(j, "detail", where);
  return v;
}

}  // namespace

bool ProverKey::same_but_z3(const ProverKey& other) const {
  return axioms == other.axioms && procedure == other.procedure && options == other.options;
}

ProverKey prover_key(const VerifyOptions& o) {
  ProverKey k;
  static const std::string axioms = hex64(fnv1a64(theory_text()));
  k.axioms = axioms;
  k.z3 = z3_version();
  k.options = {{"effort", o.effort},
               {"degree_bound", o.degree_bound},
               {"variadic_bound", o.variadic_bound},
               {"bounded_fallback", o.bounded_fallback},
               {"concrete_trials", o.concrete_trials},
               {"concrete_enough", o.concrete_enough},
               {"seed", o.seed}};
  return k;
}

std::string rule_text_hash(const Rule& rule) {
  RuleSet one;
  one.rules.push_back(rule);
  std::string text = rules_to_json(one)["rules"][0].dump();
  std::vector<bool> named(operator_definitions().size(), false);
  for (const RuleGraph* g : {&rule.source, &rule.target})
    for (const RuleNode& n : g->nodes) named[static_cast<std::size_t>(n.op)] = true;
  for (std::size_t op = 0; op < named.size(); ++op)
    if (named[op]) text += theory_text(spec::operator_theory(static_cast<OpType>(op)));
  return hex64(fnv1a64(text));
}

KeptVerdict kept_verdict(const std::string& rule, const std::string& rule_hash,
                         const RuleVerification& proof) {
  KeptVerdict v;
  v.rule = rule;
  v.rule_hash = rule_hash;
  v.verdict = proof.verdict;
  if (proof.ok()) v.proved = proof.proved;
  v.detail = proof.detail;
  v.concrete_cases = proof.concrete_cases;
  return v;
}

bool reproduces(const RuleVerification& proof, const KeptVerdict& kept) {
  return proof.verdict == kept.verdict && (!proof.ok() || proof.proved == kept.proved) &&
         proof.detail == kept.detail && proof.concrete_cases == kept.concrete_cases;
}

std::string describe(const KeptVerdict& kept) {
  return fmt::format("{} ({}; {} concrete cases)", to_string(kept.verdict), kept.detail,
                     kept.concrete_cases);
}

const KeptVerdict* KeptVerdicts::find(const std::string& rule) const {
  const auto it = std::find_if(verdicts.begin(), verdicts.end(),
                               [&](const KeptVerdict& v) { return v.rule == rule; });
  return it == verdicts.end() ? nullptr : &*it;
}

std::filesystem::path kept_verdicts_path(const std::filesystem::path& rule_file) {
  return rule_file.parent_path() / "verdicts" / rule_file.filename();
}

std::optional<KeptVerdicts> load_kept_verdicts(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const nlohmann::json j = read_json_file(path);
  const std::string where = path.string();
  try {
    if (!j.is_object() || j.value("format", "") != kFormat)
      throw InputError(fmt::format("{}: field 'format' must be \"{}\"", where, kFormat));
    if (json_integer_or(j, "version", 0, where) != 1)
      throw InputError(fmt::format("{}: field 'version' must be 1", where));
    KeptVerdicts kept;
    const nlohmann::json& prover = j.value("prover", nlohmann::json());
    kept.prover.axioms = string_field(prover, "axioms", where + ": prover");
    kept.prover.procedure = json_integer_or<int>(prover, "procedure", 0, where + ": prover");
    kept.prover.z3 = string_field(prover, "z3", where + ": prover");
    kept.prover.options = prover.value("options", nlohmann::json());
    if (!j.contains("verdicts") || !j["verdicts"].is_array())
      throw InputError(fmt::format("{}: field 'verdicts' must be a list", where));
    for (std::size_t i = 0; i < j["verdicts"].size(); ++i)
      kept.verdicts.push_back(
          kept_from_json(j["verdicts"][i], fmt::format("{}: verdicts[{}]", where, i)));
    return kept;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: a field has the wrong type ({})", where, e.what()));
  }
}

void save_kept_verdicts(const std::filesystem::path& path, const KeptVerdicts& kept) {
  std::string text = fmt::format("{{\n \"format\": \"{}\",\n \"version\": 1,\n \"prover\": {},\n",
                                 kFormat, to_json(kept.prover).dump());
  text += " \"verdicts\": [\n";
  for (std::size_t i = 0; i < kept.verdicts.size(); ++i)
    text += fmt::format("  {}{}\n", to_json(kept.verdicts[i]).dump(),
                        i + 1 < kept.verdicts.size() ? "," : "");
  text += " ]\n}\n";
  std::filesystem::create_directories(path.parent_path());
  write_text_file_atomic(path, text);
}

}  // namespace unity::rules
