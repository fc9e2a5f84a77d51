#include "unity/core/substitution_search.h"

#include <fnmatch.h>

#include <chrono>
#include <queue>
#include <unordered_set>

#include "unity/core/errors.h"
#include "unity/core/substitution.h"

namespace unity {
namespace {

struct Candidate {
  Graph graph;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
};

AppliedSubstitution describe(const Graph& g, const Match& m,
                             const std::map<std::string, std::int64_t>& params) {
  return {m.rule->name, matched_names(g, m), params, false};
}

// Every new node (id at or above `first_new`) splits its tensors into a number of pieces that
// divides the device count: otherwise some devices would hold two pieces or none.
bool fits_devices(const Graph& g, NodeId first_new, int devices) {
  if (devices <= 0) return true;
  for (auto it = g.nodes().lower_bound(first_new); it != g.nodes().end(); ++it)
    for (const auto& s : it->second.outputs) {
      const auto pieces = s.num_pieces();
      if (pieces > devices || devices % pieces != 0) return false;
    }
  return true;
}

bool touches(const Match& m, const std::set<NodeId>& frozen) {
  if (frozen.empty()) return false;
  for (const auto& [name, id] : m.nodes)
    if (frozen.count(id)) return true;
  return false;
}

bool vetoed(const std::vector<RuleLocation>& vetoes, const std::string& rule,
            const std::vector<std::string>& names) {
  for (const auto& v : vetoes)
    if (v.covers(rule, names)) return true;
  return false;
}

// Rules whose pattern root (last source node) has a type the graph holds: the others cannot match.
std::vector<const Rule*> applicable_rules(const Graph& g, const RuleSet& rules,
                                          const SearchOptions& options) {
  std::set<OpType> present;
  for (const auto& [id, n] : g.nodes()) present.insert(n.op.type);
  std::vector<const Rule*> out;
  for (const auto& rule : rules.rules) {
    if (!options.kind.empty() && rule.kind != options.kind) continue;
    bool everywhere = false;
    for (const auto& v : options.vetoed) everywhere |= v.node.empty() && v.covers(rule.name, {});
    if (everywhere) continue;
    bool all_present = true;
    for (const auto& n : rule.source.nodes) all_present &= present.count(n.op) != 0;
    if (all_present) out.push_back(&rule);
  }
  return out;
}

// A match the search may rewrite: no frozen node, no pinned node for an algebraic rule, not vetoed.
bool allowed(const Graph& g, const Rule& rule, const Match& m, const SearchOptions& options) {
  if (touches(m, options.frozen)) return false;
  if (!rule.is_parallel() && touches(m, options.pinned)) return false;
  return !vetoed(options.vetoed, rule.name, matched_names(g, m));
}

// `rule` with the same parameters at every match that takes them, one after another: repeated
// structure (the encoders of CANDLE-Uno, DLRM's 26 tables, the layers of an MLP) is rewritten in
// one step, where single applications would need one search step per copy and run out of budget.
// A match on a node an earlier application made is not taken. Null unless it applied twice or more.
std::optional<Graph> apply_at_every_match(const Graph& graph, const Rule& rule,
                                          const std::map<std::string, std::int64_t>& params,
                                          const SearchOptions& options,
                                          std::vector<AppliedSubstitution>& applied,
                                          std::vector<NodeId>& matched) {
  Graph g = graph;
  const NodeId first_new = graph.next_id();
  std::set<std::vector<NodeId>> refused;  // matches this parameter choice does not apply to
  int count = 0;
  const int limit = 4 * static_cast<int>(graph.size()) + 16;  // as apply_everywhere
  for (bool changed = true; changed && count < limit;) {
    changed = false;
    for (const auto& m : find_matches(g, rule)) {
      const auto nodes = m.matched_nodes();
      if (refused.count(nodes)) continue;
      bool fresh = false;
      for (NodeId id : nodes) fresh |= id >= first_new;
      if (fresh || !allowed(g, rule, m, options)) continue;
      auto description = describe(g, m, params);
      if (!apply_substitution_in_place(g, m, params)) {
        refused.insert(nodes);
        continue;
      }
      applied.push_back(std::move(description));
      matched.insert(matched.end(), nodes.begin(), nodes.end());
      ++count;
      changed = true;
      break;
    }
  }
  if (count < 2) return std::nullopt;
  return g;
}

}  // namespace

bool RuleLocation::is_pattern() const { return rule.find_first_of("*?[") != std::string::npos; }

bool RuleLocation::names(const std::string& rule_name) const {
  return is_pattern() ? fnmatch(rule.c_str(), rule_name.c_str(), 0) == 0 : rule == rule_name;
}

bool RuleLocation::covers(const std::string& rule_name,
                          const std::vector<std::string>& matched) const {
  if (!names(rule_name)) return false;
  if (node.empty()) return true;
  return std::find(matched.begin(), matched.end(), node) != matched.end();
}

RuleLocation parse_rule_location(const std::string& text) {
  const auto at = text.find('@');
  if (at == std::string::npos) return {text, ""};
  return {text.substr(0, at), text.substr(at + 1)};
}

std::string to_string(const RuleLocation& location) {
  return location.node.empty() ? location.rule : location.rule + "@" + location.node;
}

std::vector<std::string> matched_names(const Graph& graph, const Match& match) {
  std::vector<std::string> out;
  for (NodeId id : match.matched_nodes()) out.push_back(graph.node(id).op.name);
  return out;
}

Graph apply_everywhere(const Graph& graph, const Rule& rule, const RuleLocation& location,
                       const std::vector<std::int64_t>& degrees,
                       std::vector<AppliedSubstitution>& applied, NodeId fresh_from) {
  Graph g = graph;
  // Each application replaces its match, so the loop ends when no match is left; a match that
  // touches a node an earlier application created is not taken (a target that matches its own
  // source, like head parallelism on an already head-parallel attention, is applied once).
  const NodeId first_new = fresh_from >= 0 ? fresh_from : graph.next_id();
  for (std::size_t round = 0, limit = 4 * graph.size() + 16; round < limit; ++round) {
    bool changed = false;
    for (const auto& m : find_matches(g, rule)) {
      if (!location.covers(rule.name, matched_names(g, m))) continue;
      bool fresh = false;
      for (NodeId id : m.matched_nodes()) fresh |= id >= first_new;
      if (fresh) continue;
      for (const auto& params : parameter_choices(g, m, degrees)) {
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
    if (!changed) break;
  }
  return g;
}

bool matches_at(const Graph& graph, const Rule& rule, const RuleLocation& location,
                const std::vector<std::int64_t>& degrees, NodeId original_below) {
  for (const auto& m : find_matches(graph, rule)) {
    if (!location.covers(rule.name, matched_names(graph, m))) continue;
    bool original = true;
    for (NodeId id : m.matched_nodes()) original &= id < original_below;
    if (!original) continue;
    for (const auto& params : parameter_choices(graph, m, degrees))
      if (apply_substitution(graph, m, params)) return true;
  }
  return false;
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
  SearchEvent ev = options.scope;
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
    if (options.on_costed) options.on_costed(c->graph, c->cost, c->applied);
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
    const Graph& g = current->graph;
    bool out_of_budget = false;
    auto consider = [&](std::optional<Graph> next, std::vector<AppliedSubstitution> applied,
                        const Rule& rule, std::vector<NodeId> nodes, std::vector<std::string> names,
                        const std::map<std::string, std::int64_t>& params) {
      if (!next || !fits_devices(*next, g.next_id(), options.devices)) return;
      ev.rule = rule.name;
      ev.matched_nodes = std::move(nodes);
      ev.matched_names = std::move(names);
      ev.parameters = params;
      const Candidate* before = best;
      const Candidate* c = admit(std::move(*next), std::move(applied));
      if (!c) return;
      emit(SearchEvent::Kind::CandidateCosted);
      if (best != before)
        emit(SearchEvent::Kind::NewBest);
      else if (c->cost.key() > options.alpha * best->cost.key())
        emit(SearchEvent::Kind::Pruned);
    };
    const auto candidate_rules = applicable_rules(g, rules, options);
    // Each rule at all its matches at once first (see apply_at_every_match), then one at a time.
    for (const Rule* rule : candidate_rules) {
      const auto matches = find_matches(g, *rule);
      if (matches.size() < 2) continue;
      std::set<std::map<std::string, std::int64_t>> choices;
      for (const auto& m : matches)
        if (allowed(g, *rule, m, options))
          for (auto& params : parameter_choices(g, m, options.degrees)) choices.insert(params);
      for (const auto& params : choices) {
        if (result.candidates_evaluated >= options.budget) {
          out_of_budget = true;
          break;
        }
        if (options.cancel && options.cancel->load()) break;
        auto applied = current->applied;
        const auto first = applied.size();
        std::vector<NodeId> nodes;  // every application's matched nodes, all of them in `g`
        auto next = apply_at_every_match(g, *rule, params, options, applied, nodes);
        std::vector<std::string> names;
        for (std::size_t i = first; i < applied.size(); ++i)
          names.insert(names.end(), applied[i].nodes.begin(), applied[i].nodes.end());
        consider(std::move(next), std::move(applied), *rule, std::move(nodes), std::move(names),
                 params);
      }
      if (out_of_budget) break;
    }
    for (const Rule* rule : out_of_budget ? std::vector<const Rule*>{} : candidate_rules) {
      for (const auto& m : find_matches(g, *rule)) {
        if (!allowed(g, *rule, m, options)) continue;
        const auto names = matched_names(g, m);
        for (const auto& params : parameter_choices(g, m, options.degrees)) {
          if (result.candidates_evaluated >= options.budget) {
            out_of_budget = true;
            break;
          }
          if (options.cancel && options.cancel->load()) break;
          auto applied = current->applied;
          applied.push_back({rule->name, names, params, false});
          consider(apply_substitution(g, m, params), std::move(applied), *rule, m.matched_nodes(),
                   names, params);
        }
        if (out_of_budget) break;
      }
      if (out_of_budget) break;
    }
    ++ev.step;
    ev.rule.clear();
    ev.matched_nodes.clear();
    ev.matched_names.clear();
    ev.parameters.clear();
    emit(SearchEvent::Kind::StepDone);
    if (out_of_budget) {
      result.status = "budget";
      break;
    }
  }
  if (result.status == "completed" && options.cancel && options.cancel->load())
    result.status = "cancelled";
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
