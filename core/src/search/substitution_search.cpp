#include "unity/core/substitution_search.h"

#include <chrono>
#include <queue>
#include <unordered_set>

#include "unity/core/substitution.h"

namespace unity {
namespace {

struct Candidate {
  Graph graph;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
};

// Every assignment of the rule's parameters to the allowed values.
std::vector<std::map<std::string, std::int64_t>> parameter_choices(
    const Rule& rule, const std::vector<std::int64_t>& values) {
  std::vector<std::map<std::string, std::int64_t>> out{{}};
  for (const auto& p : rule.parameters) {
    std::vector<std::map<std::string, std::int64_t>> next;
    for (const auto& partial : out)
      for (auto v : values) {
        auto m = partial;
        m[p] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

AppliedSubstitution describe(const Graph& g, const Match& m,
                             const std::map<std::string, std::int64_t>& params) {
  AppliedSubstitution a;
  a.rule = m.rule->name;
  for (NodeId id : m.matched_nodes()) a.nodes.push_back(g.node(id).op.name);
  a.parameters = params;
  return a;
}

}  // namespace

Graph apply_everywhere(const Graph& graph, const Rule& rule, const std::vector<std::int64_t>& degrees,
                       std::vector<AppliedSubstitution>& applied) {
  Graph g = graph;
  // Each application removes the matched nodes, so the loop ends when no match applies.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& m : find_matches(g, rule)) {
      for (const auto& params : parameter_choices(rule, degrees)) {
        if (auto next = apply_substitution(g, m, params)) {
          auto a = describe(g, m, params);
          a.pinned = true;
          applied.push_back(std::move(a));
          g = std::move(*next);
          changed = true;
          break;
        }
      }
      if (changed) break;
    }
  }
  return g;
}

SearchResult substitution_search(const Graph& start, const std::vector<Graph>& seeds,
                                 const RuleSet& rules, const CostFunction& cost,
                                 const SearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto cmp = [](const Candidate* a, const Candidate* b) { return a->cost.key() > b->cost.key(); };
  std::priority_queue<Candidate*, std::vector<Candidate*>, decltype(cmp)> queue(cmp);
  std::vector<std::unique_ptr<Candidate>> pool;
  std::unordered_set<std::uint64_t> seen;
  SearchResult result;
  SearchEvent ev;
  auto emit = [&](SearchEvent::Kind kind) {
    if (!options.observer) return;
    ev.kind = kind;
    ev.elapsed_seconds = elapsed();
    ev.queue_size = static_cast<std::int64_t>(queue.size());
    ev.candidates_evaluated = result.candidates_evaluated;
    options.observer->on_event(ev);
  };

  const Candidate* best = nullptr;
  auto admit = [&](Graph g, std::vector<AppliedSubstitution> applied) -> const Candidate* {
    const auto hash = g.structural_hash();
    if (!seen.insert(hash).second) return nullptr;
    auto c = std::make_unique<Candidate>(Candidate{std::move(g), {}, std::move(applied)});
    c->cost = cost(c->graph);
    ++result.candidates_evaluated;
    ev.candidate_ms = c->cost.time * 1e3;
    ev.candidate_hash = hash;
    const bool better = !best || c->cost.key() < best->cost.key();
    pool.push_back(std::move(c));
    Candidate* raw = pool.back().get();
    if (better) best = raw;
    ev.best_ms = best->cost.time * 1e3;
    if (raw->cost.key() <= options.alpha * best->cost.key()) queue.push(raw);
    return raw;
  };

  admit(start, {});
  ev.best_ms = best->cost.time * 1e3;
  emit(SearchEvent::Kind::Started);
  for (const auto& s : seeds) admit(s, {});

  result.status = "completed";
  while (!queue.empty()) {
    if (options.cancel && options.cancel->load()) {
      result.status = "cancelled";
      break;
    }
    const Candidate* current = queue.top();
    queue.pop();
    if (current->cost.key() > options.alpha * best->cost.key()) continue;
    bool out_of_budget = false;
    for (const auto& rule : rules.rules) {
      if (options.vetoed.count(rule.name)) continue;
      if (!options.kind.empty() && rule.kind != options.kind) continue;
      for (const auto& m : find_matches(current->graph, rule)) {
        for (const auto& params : parameter_choices(rule, options.degrees)) {
          if (result.candidates_evaluated >= options.budget) {
            out_of_budget = true;
            break;
          }
          auto next = apply_substitution(current->graph, m, params);
          if (!next) continue;
          auto applied = current->applied;
          applied.push_back(describe(current->graph, m, params));
          ev.rule = rule.name;
          ev.matched_nodes = m.matched_nodes();
          const Candidate* before = best;
          const Candidate* c = admit(std::move(*next), std::move(applied));
          if (!c) continue;
          emit(SearchEvent::Kind::CandidateCosted);
          if (best != before) emit(SearchEvent::Kind::NewBest);
          else if (c->cost.key() > options.alpha * best->cost.key()) emit(SearchEvent::Kind::Pruned);
        }
        if (out_of_budget) break;
      }
      if (out_of_budget) break;
    }
    ++ev.step;
    ev.rule.clear();
    ev.matched_nodes.clear();
    emit(SearchEvent::Kind::StepDone);
    if (out_of_budget) {
      result.status = "budget";
      break;
    }
  }
  ev.status = result.status;
  emit(SearchEvent::Kind::Finished);
  result.best = best->graph;
  result.cost = best->cost;
  result.applied = best->applied;
  return result;
}

const char* to_string(SearchEvent::Kind kind) {
  switch (kind) {
    case SearchEvent::Kind::Started:
      return "started";
    case SearchEvent::Kind::CandidateCosted:
      return "candidate";
    case SearchEvent::Kind::NewBest:
      return "new-best";
    case SearchEvent::Kind::Pruned:
      return "pruned";
    case SearchEvent::Kind::StepDone:
      return "step";
    default:
      return "finished";
  }
}

}  // namespace unity
