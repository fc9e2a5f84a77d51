#include "unity/rules/generator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "../parallel_for.h"
#include "../verify/verify_internal.h"
#include "candidates.h"
#include "families.h"
#include "implication.h"
#include "rule_writer.h"
#include "variadic_generalization.h"

namespace unity::rules {
namespace {

using Clock = std::chrono::steady_clock;
using namespace gen;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Pending {
  const Enumeration* e = nullptr;
  int source = 0, target = 0;
  Rule rule;  // the most general form
  int size = 0;
  // Filled by verification: the rule as verified (possibly less general), and how.
  std::optional<Rule> verified;
  RuleVerification verification;
};

// One proof attempt in a Z3 context of its own, so that its verdict depends on the rule alone (as
// `unity rules verify` proves it), not on the candidates another thread proved before.
RuleVerification verify_alone(const Rule& rule, const VerifyOptions& options) {
  spec::Prover prover;
  return verify_with(rule, options, prover);
}

// Verifies the most general form, then less general ones until one holds.
void verify_pending(Pending& p, const VerifyOptions& options) {
  std::set<std::string> tried;
  for (Level level : {Level::General, Level::Symbolic, Level::LiteralDims, Level::Literal}) {
    std::optional<Rule> r =
        level == Level::General
            ? std::optional<Rule>(p.rule)
            : write_rule(*p.e, p.e->graphs[static_cast<std::size_t>(p.source)],
                         p.e->graphs[static_cast<std::size_t>(p.target)], level);
    if (!r) continue;
    if (!tried.insert(rule_key(*r)).second) continue;
    // The general forms get a short proof attempt: when it does not go through, a less general form
    // usually does.
    VerifyOptions o = options;
    if (level == Level::General || level == Level::Symbolic) {
      o.effort = std::min<std::uint64_t>(o.effort, 800'000);
      o.bounded_fallback = false;
    }
    auto v = verify_alone(*r, o);
    if (std::getenv("UNITY_RULES_DEBUG"))
      std::fprintf(stderr, "[%d] %-16s %5.2fs %s | %s\n", static_cast<int>(level),
                   std::string(to_string(v.verdict)).c_str(), v.seconds, r->description.c_str(),
                   v.detail.substr(0, 200).c_str());
    if (v.ok()) {
      // A Concat rule that holds for two inputs usually holds for any number: keep that form.
      if (auto variadic = variadic_concat(*r)) {
        auto vv = verify_alone(*variadic, options);
        if (vv.ok()) {
          r = std::move(variadic);
          v = std::move(vv);
        }
      }
      if (v.proved.bounded()) r->verified = to_string(v.proved);
      p.verified = std::move(r);
      p.verification = std::move(v);
      return;
    }
    p.verification = std::move(v);
    if (p.verification.verdict == Verdict::Invalid) continue;
  }
}

// A rule whose source holds no parallel operator but whose target undoes a split or a reduction of
// a rule input before computing: it re-derives what moving parallel operators and cancelling them
// do.
bool is_detour(const Rule& r) {
  for (const auto& n : r.source.nodes)
    if (is_parallel_op(n.op)) return false;
  for (const auto& n : r.target.nodes) {
    if (n.op != OpType::Combine && n.op != OpType::Reduce && n.op != OpType::Batch) continue;
    for (const auto& in : n.inputs)
      if (std::find(r.inputs.begin(), r.inputs.end(), in) != r.inputs.end()) return true;
  }
  return false;
}

// A rule that parallelises a serial computation in one step. These are the search's first moves
// from the serial graph, so they are kept even where smaller rules derive them: a derivation
// through intermediate plans costs the budgeted search candidates, and the intermediate plans are
// often slower, so the search (pruning at alpha x the best) never walks through them. Only
// single-stage ones: a target that gathers (Combine, Reduce, ...) before its output chains two
// parallelisations, which the search reaches from the one-step rules.
bool introduces_parallelism(const Rule& r) {
  for (const auto& n : r.source.nodes)
    if (is_parallel_op(n.op)) return false;
  bool parallel = false;
  for (const auto& n : r.target.nodes) {
    parallel |= is_parallel_op(n.op);
    const bool gathers = n.op == OpType::Combine || n.op == OpType::Reduce ||
                         n.op == OpType::AllReduce || n.op == OpType::Batch;
    if (gathers && std::find(r.target.outputs.begin(), r.target.outputs.end(), n.name) ==
                       r.target.outputs.end())
      return false;
  }
  return parallel;
}

// Where a rule goes in the file: the search tries rules in file order, so rules that introduce
// parallelism come first, then those that cancel or fuse parallel operators, then those that move
// them, then the algebraic ones.
int priority(const Rule& r) {
  bool src_parallel = false, tgt_parallel = false, src_compute = false;
  for (const auto& n : r.source.nodes) (is_parallel_op(n.op) ? src_parallel : src_compute) = true;
  for (const auto& n : r.target.nodes) tgt_parallel |= is_parallel_op(n.op);
  if (!src_parallel && tgt_parallel) return 0;
  if (src_parallel && !src_compute) return 1;
  if (src_parallel || tgt_parallel) return 2;
  return 3;
}

}  // namespace

GenerateResult generate_rules(const GenerateOptions& options, const ProgressFunction& progress) {
  const auto started = Clock::now();
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  GenerateResult result;
  auto& st = result.stats;

  // 1. Enumerate and fingerprint every family.
  std::vector<Family> fams;
  auto wanted = [&](const std::string& name) {
    if (options.only.empty()) return true;
    std::size_t begin = 0;
    while (begin <= options.only.size()) {
      const std::size_t end = std::min(options.only.find(',', begin), options.only.size());
      const std::string part = options.only.substr(begin, end - begin);
      if (!part.empty() && name.find(part) != std::string::npos) return true;
      begin = end + 1;
    }
    return false;
  };
  for (auto& f : families(options.max_ops, options.seed))
    if (wanted(f.name)) fams.push_back(std::move(f));
  st.families = static_cast<int>(fams.size());
  std::vector<Enumeration> enums(fams.size());
  std::vector<std::vector<Candidate>> cands(fams.size());
  std::vector<CandidateStats> cstats(fams.size());
  parallel_for(fams.size(), options.threads, [&](std::size_t i) {
    enums[i] = enumerate(fams[i], options.max_ops);
    cands[i] = candidates(enums[i], cstats[i]);
  });
  for (std::size_t i = 0; i < fams.size(); ++i) {
    st.graphs_evaluated += enums[i].visited;
    st.graphs += static_cast<std::int64_t>(enums[i].graphs.size());
    st.classes += cstats[i].classes;
    st.candidates += cstats[i].proposed;
    st.pruned_common += cstats[i].pruned_common;
  }
  st.enumerate_seconds = since(started);
  say(fmt::format(
      "enumerated {} families: {} graphs, {} classes, {} candidates ({} with a common subgraph) in "
      "{:.1f} s",
      st.families, st.graphs, st.classes, st.candidates, st.pruned_common, st.enumerate_seconds));

  // 2. Write each candidate at its most general; drop duplicates up to renaming.
  std::vector<Pending> pending;
  std::set<std::string> keys;
  for (std::size_t i = 0; i < fams.size(); ++i)
    for (const auto& c : cands[i]) {
      const auto& e = enums[i];
      auto r = write_rule(e, e.graphs[static_cast<std::size_t>(c.source)],
                          e.graphs[static_cast<std::size_t>(c.target)], Level::General);
      if (!r) continue;
      if (!keys.insert(rule_key(*r)).second) {
        ++st.pruned_duplicate;
        continue;
      }
      Pending p;
      p.e = &e;
      p.source = c.source;
      p.target = c.target;
      p.size = rule_size(*r);
      p.rule = std::move(*r);
      pending.push_back(std::move(p));
    }
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Pending& a, const Pending& b) { return a.size < b.size; });
  say(fmt::format("{} distinct candidates to verify", pending.size()));

  // 3. Verify by size, smallest first; a verified candidate is kept unless smaller kept rules imply
  // it.
  const auto verify_started = Clock::now();
  ImplicationChecker implied;
  std::set<std::string> accepted_keys;
  std::vector<std::pair<Rule, RuleVerification>> accepted;
  for (std::size_t begin = 0; begin < pending.size();) {
    std::size_t end = begin;
    while (end < pending.size() && pending[end].size == pending[begin].size) ++end;
    // A candidate the kept (smaller, verified) rules derive is correct and redundant: drop it
    // before spending a proof on it.
    std::vector<std::size_t> todo;
    for (std::size_t k = begin; k < end; ++k) {
      const Pending& p = pending[k];
      if (options.prune_implied && !introduces_parallelism(p.rule) &&
          implied.implied(*p.e, p.e->graphs[static_cast<std::size_t>(p.source)],
                          p.e->graphs[static_cast<std::size_t>(p.target)])) {
        ++st.pruned_implied;
        continue;
      }
      todo.push_back(k);
    }
    parallel_for(todo.size(), options.threads,
                 [&](std::size_t i) { verify_pending(pending[todo[i]], options.verify); });
    // Verified rules of this size join in order, smaller sources first and detours last: a rule
    // that those already kept (of this size or smaller) derive is dropped too, so the kept basis is
    // the one the search can use in the fewest steps.
    std::stable_sort(todo.begin(), todo.end(), [&](std::size_t a, std::size_t b) {
      const Rule &ra = pending[a].rule, &rb = pending[b].rule;
      if (is_detour(ra) != is_detour(rb)) return is_detour(rb);
      return ra.source.nodes.size() < rb.source.nodes.size();
    });
    for (std::size_t k : todo) {
      Pending& p = pending[k];
      if (!p.verified) {
        ++st.not_verified;
        continue;
      }
      if (!accepted_keys.insert(rule_key(*p.verified)).second) {
        ++st.pruned_duplicate;
        continue;
      }
      if (options.prune_implied && !introduces_parallelism(p.rule) &&
          implied.implied(*p.e, p.e->graphs[static_cast<std::size_t>(p.source)],
                          p.e->graphs[static_cast<std::size_t>(p.target)])) {
        ++st.pruned_implied;
        continue;
      }
      accepted.emplace_back(*p.verified, p.verification);
      implied.add(accepted.back().first);
    }
    say(fmt::format("size {}: {} candidates, {} verified, {} rules kept ({:.1f} s)",
                    pending[begin].size, end - begin, todo.size(), accepted.size(),
                    since(verify_started)));
    begin = end;
  }
  st.verify_seconds = since(verify_started);

  // 4. Name the rules after their operators and order them for the search.
  std::stable_sort(accepted.begin(), accepted.end(), [](const auto& a, const auto& b) {
    return priority(a.first) < priority(b.first);
  });
  std::map<std::string, int> used;
  for (auto& [rule, verification] : accepted) {
    // The name: the source's operators, outermost first, then the target's.
    // Runs of one operator read as "replicatex4".
    auto ops = [](const RuleGraph& g) {
      std::vector<std::string> names;
      for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
        std::string n(to_string(it->op));
        std::transform(n.begin(), n.end(), n.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        names.push_back(n);
      }
      std::string s;
      for (std::size_t i = 0; i < names.size();) {
        std::size_t j = i;
        while (j < names.size() && names[j] == names[i]) ++j;
        s += (s.empty() ? "" : "_") + names[i] +
             (j - i > 2    ? fmt::format("x{}", j - i)
              : j - i == 2 ? "_" + names[i]
                           : "");
        i = j;
      }
      return s.empty() ? std::string("input") : s;
    };
    std::string name = ops(rule.source) + "__" + ops(rule.target);
    const int n = ++used[name];
    if (n > 1) name += fmt::format("_{}", n);
    rule.name = name;
    verification.rule = name;
    if (verification.verdict == Verdict::Verified)
      ++st.verified;
    else
      ++st.verified_bounded;
    if (rule.is_parallel()) ++st.parallel_rules;
    result.rules.rules.push_back(rule);
    result.verifications.push_back(verification);
  }
  st.total_seconds = since(started);
  return result;
}

}  // namespace unity::rules
