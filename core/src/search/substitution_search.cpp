#include "unity/core/search/substitution_search.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_set>

#include "hashing.h"
#include "unity/core/errors.h"
#include "unity/core/rules/substitution.h"

namespace unity {
namespace {

// How much a rewrite at one place changed the cheap estimate, by rewrite_key: a candidate's
// successors that rewrite the same operators reading the same tensors as one of its ancestor's
// change it by about as much, so only the rewrites an expansion has not seen before are built
// and estimated.
using EstimateChanges = std::unordered_map<std::uint64_t, double>;
constexpr double kNeverBuilds = std::numeric_limits<double>::infinity();

struct Candidate {
  Graph graph;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
  std::shared_ptr<const EstimateChanges> inherited;  // from the expansion that made it
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

// The largest candidate worth costing: four parallel operators for every tensor an operator of
// the starting graph reads. Rewrites that cost nothing, such as parallel operators stacked on an
// input the reader loads where it runs anyway, would otherwise grow the graphs of a plateau
// without end, and a plan never needs more to lay out one tensor.
std::size_t size_limit(const Graph& start) {
  std::size_t reads = 0;
  for (const auto& [id, n] : start.nodes()) reads += n.inputs.size();
  return start.size() + 4 * reads;
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
    if (options.kind && rule.kind != *options.kind) continue;
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

// One way to rewrite a candidate, not built yet: `rule` with `params` at `match`, or at every match
// that takes them when `match` is empty.
struct Successor {
  const Rule* rule = nullptr;
  std::map<std::string, std::int64_t> params;
  std::optional<Match> match;
};

// A candidate's successors in rule order and, with a ranking, in the ranking's order; they are
// tried from both orders in turn, so what the cheap estimate cannot see (it prices everything as
// if on the same devices) is still reached in rule order.
struct Expansion {
  const Candidate* parent = nullptr;
  std::vector<Successor> successors;
  std::vector<std::size_t> ranked;  // indices into successors, best estimate first
  std::vector<bool> tried;
  std::size_t next_in_order = 0, next_in_rank = 0, left = 0;
  bool from_rank = true;
  std::shared_ptr<const EstimateChanges> changes;  // handed on to the candidates it makes

  bool done() const { return left == 0; }
  const Successor& take() {
    while (next_in_rank < ranked.size() && tried[ranked[next_in_rank]]) ++next_in_rank;
    while (next_in_order < successors.size() && tried[next_in_order]) ++next_in_order;
    const bool by_rank =
        (from_rank && next_in_rank < ranked.size()) || next_in_order == successors.size();
    const std::size_t i = by_rank ? ranked[next_in_rank] : next_in_order;
    from_rank = !from_rank;
    tried[i] = true;
    --left;
    return successors[i];
  }
};

// The successor's graph, the substitutions it adds to `applied` and the nodes and names they
// matched; nothing when it does not apply, is larger than `max_size` or does not fit the devices.
std::optional<Graph> build(const Graph& g, const Successor& s, const SearchOptions& options,
                           std::size_t max_size, std::vector<AppliedSubstitution>& applied,
                           std::vector<NodeId>& nodes, std::vector<std::string>& names) {
  std::optional<Graph> next;
  if (!s.match) {
    const auto first = applied.size();
    next = apply_at_every_match(g, *s.rule, s.params, options, applied, nodes);
    for (std::size_t i = first; i < applied.size(); ++i)
      names.insert(names.end(), applied[i].nodes.begin(), applied[i].nodes.end());
  } else {
    applied.push_back(describe(g, *s.match, s.params));
    names = applied.back().nodes;
    nodes = s.match->matched_nodes();
    next = apply_substitution(g, *s.match, s.params);
  }
  if (next && (next->size() > max_size || !fits_devices(*next, g.next_id(), options.devices)))
    next.reset();
  return next;
}

bool past_deadline(const SearchOptions& options) {
  return options.deadline && std::chrono::steady_clock::now() >= *options.deadline;
}

// The rule and its parameters: the part of a rewrite's keys that does not depend on where it is.
void hash_rule(detail::Hasher& h, const Successor& s) {
  h.str(s.rule->name);
  for (const auto& [name, value] : s.params) {
    h.str(name);
    h.i64(value);
  }
}

// A single-match rewrite: the rule, its parameters, the operators it replaces and the tensors
// they read.
std::uint64_t rewrite_key(const Successor& s) {
  detail::Hasher h;
  hash_rule(h, s);
  for (NodeId id : s.match->matched_nodes()) h.i64(id);
  for (const auto& [name, t] : s.match->inputs) {
    h.i64(t.node);
    h.i64(t.index);
  }
  for (const auto& t : s.match->variadic) {
    h.i64(t.node);
    h.i64(t.index);
  }
  return h.value();
}

// The same rewrite at an equal place: the rule and its parameters, the matched operators (type,
// attributes, parallel shapes), the operators that produce what they read and those that read what
// they produce. An unrolled RNN repeats one step's rewrites at every step; they change the cheap
// estimate by about as much, so an expansion builds and estimates one of them, not all (27,120
// successors of a 1,000-operator LSTM were 22 s of building and estimating).
using Readers = std::unordered_map<NodeId, std::vector<Use>>;

Readers readers_of(const Graph& g) {
  Readers out;
  for (const auto& [id, n] : g.nodes())
    for (int slot = 0; slot < static_cast<int>(n.inputs.size()); ++slot)
      out[n.inputs[slot].node].push_back({id, slot});
  return out;
}

std::uint64_t place_key(const Graph& g, const Readers& readers_of_node, const Successor& s) {
  detail::Hasher h;
  hash_rule(h, s);
  const auto matched = s.match->matched_nodes();
  auto position = [&](NodeId id) {
    const auto it = std::find(matched.begin(), matched.end(), id);
    return it == matched.end() ? -1 : static_cast<std::int64_t>(it - matched.begin());
  };
  for (const NodeId id : matched) {
    const Node& n = g.node(id);
    detail::hash_operator(h, n);
    h.u64(n.inputs.size());
    for (const auto& in : n.inputs) {
      const std::int64_t inside = position(in.node);
      h.i64(inside);
      if (inside < 0) detail::hash_operator(h, g.node(in.node));
      h.i64(in.index);
    }
    std::vector<std::uint64_t> readers;
    const auto it = readers_of_node.find(id);
    for (const auto& u : it == readers_of_node.end() ? std::vector<Use>{} : it->second) {
      if (position(u.node) >= 0) continue;
      detail::Hasher r;
      detail::hash_operator(r, g.node(u.node));
      r.u64(static_cast<std::uint64_t>(u.slot));
      readers.push_back(r.value());
    }
    std::sort(readers.begin(), readers.end());
    h.u64(readers.size());
    for (const auto x : readers) h.u64(x);
  }
  return h.value();
}

// Every rule at all its matches at once first (see apply_at_every_match), then one at a time; with
// `options.rank`, also ordered by how much each changes the estimate (the successors that do not
// build or fit are left out). A rewrite at a place equal to one already estimated takes its
// change; past the deadline the rest stay unranked and are reached in rule order.
Expansion expand(const Candidate& parent, const RuleSet& rules, const SearchOptions& options,
                 std::size_t max_size) {
  const Graph& g = parent.graph;
  Expansion x;
  x.parent = &parent;
  const auto candidate_rules = applicable_rules(g, rules, options);
  for (const Rule* rule : candidate_rules) {
    const auto matches = find_matches(g, *rule);
    if (matches.size() < 2) continue;
    std::set<std::map<std::string, std::int64_t>> choices;
    for (const auto& m : matches)
      if (allowed(g, *rule, m, options))
        for (auto& params : parameter_choices(g, m, options.degrees)) choices.insert(params);
    for (const auto& params : choices) x.successors.push_back({rule, params, std::nullopt});
  }
  for (const Rule* rule : candidate_rules)
    for (const auto& m : find_matches(g, *rule)) {
      if (!allowed(g, *rule, m, options)) continue;
      for (auto& params : parameter_choices(g, m, options.degrees))
        x.successors.push_back({rule, std::move(params), m});
    }
  x.tried.assign(x.successors.size(), false);
  x.left = x.successors.size();
  if (!options.rank) return x;
  auto changes = std::make_shared<EstimateChanges>();
  const double here = options.rank(g);
  std::vector<std::pair<double, std::size_t>> scores;
  std::unordered_map<std::uint64_t, double> by_place;
  const Readers readers = readers_of(g);
  for (std::size_t i = 0; i < x.successors.size(); ++i) {
    if (past_deadline(options)) break;
    const Successor& s = x.successors[i];
    const std::uint64_t key = s.match ? rewrite_key(s) : 0;
    if (s.match && parent.inherited) {
      if (auto it = parent.inherited->find(key); it != parent.inherited->end()) {
        changes->emplace(key, it->second);
        if (std::isinf(it->second)) {
          x.tried[i] = true;
          --x.left;
        } else {
          scores.emplace_back(it->second, i);
        }
        continue;
      }
    }
    const std::uint64_t place = s.match ? place_key(g, readers, s) : 0;
    if (s.match) {
      if (auto it = by_place.find(place); it != by_place.end()) {
        // Left untried where the equal place did not build: this one is built when taken.
        if (!std::isinf(it->second)) {
          changes->emplace(key, it->second);
          scores.emplace_back(it->second, i);
        }
        continue;
      }
    }
    std::vector<AppliedSubstitution> applied;
    std::vector<NodeId> nodes;
    std::vector<std::string> names;
    const auto next = build(g, s, options, max_size, applied, nodes, names);
    if (!next) {
      x.tried[i] = true;  // nothing to try
      --x.left;
      if (s.match) {
        changes->emplace(key, kNeverBuilds);
        by_place.emplace(place, kNeverBuilds);
      }
      continue;
    }
    const double change = options.rank(*next) - here;
    if (s.match) {
      changes->emplace(key, change);
      by_place.emplace(place, change);
    }
    scores.emplace_back(change, i);
  }
  std::stable_sort(scores.begin(), scores.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [score, i] : scores) x.ranked.push_back(i);
  x.changes = std::move(changes);
  return x;
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
  // The queue holds candidates not yet expanded and expansions not yet finished, by key; at equal
  // keys the smaller graph first (a rewrite that costs nothing, such as a Partition and Combine
  // pair on a weight, must not lead the search down ever larger graphs of the same cost), then the
  // one queued first.
  struct Entry {
    double key;
    std::size_t size;
    std::uint64_t order;
    Candidate* candidate;  // to expand
    Expansion* expansion;  // or to go on with
  };
  auto cmp = [](const Entry& a, const Entry& b) {
    if (a.key != b.key) return a.key > b.key;
    return a.size != b.size ? a.size > b.size : a.order > b.order;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(cmp)> queue(cmp);
  std::uint64_t queued = 0;
  std::vector<std::unique_ptr<Candidate>> pool;
  std::vector<std::unique_ptr<Expansion>> expansions;
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
  auto admit = [&](Graph g, std::vector<AppliedSubstitution> applied,
                   std::shared_ptr<const EstimateChanges> inherited) -> const Candidate* {
    const auto hash = g.structural_hash();
    if (!seen.insert(hash).second) return nullptr;
    auto c = std::make_unique<Candidate>(
        Candidate{std::move(g), {}, std::move(applied), std::move(inherited)});
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
    ev.best_fits = best->cost.fits;
    if (raw->cost.key() <= options.alpha * best->cost.key())
      queue.push({raw->cost.key(), raw->graph.size(), queued++, raw, nullptr});
    return raw;
  };

  admit(start, {}, nullptr);
  const std::size_t max_size = size_limit(start);
  ev.best_ms = best->cost.time * 1e3;
  ev.best_fits = best->cost.fits;
  emit(SearchEvent::Kind::Started);
  for (const auto& s : seeds) admit(s, {}, nullptr);

  const std::int64_t per_step =
      options.per_step > 0 ? options.per_step : std::max<std::int64_t>(8, options.budget / 4);
  result.status = "completed";
  while (!queue.empty()) {
    if (options.cancel && options.cancel->load()) {
      result.status = "cancelled";
      break;
    }
    if (past_deadline(options)) {
      result.status = "time limit";
      break;
    }
    const Entry top = queue.top();
    queue.pop();
    Expansion* x = top.expansion;
    if (!x) {
      // A finished expansion is never resumed, so a candidate that fell behind the best while
      // queued is dropped here, as it would have been before its expansion began.
      if (top.key > options.alpha * best->cost.key()) continue;
      expansions.push_back(
          std::make_unique<Expansion>(expand(*top.candidate, rules, options, max_size)));
      x = expansions.back().get();
    }
    const Candidate& parent = *x->parent;
    const Graph& g = parent.graph;
    bool out_of_budget = false;
    std::int64_t costed = 0;
    while (!x->done() && costed < per_step) {
      if (result.candidates_evaluated >= options.budget) {
        out_of_budget = true;
        break;
      }
      if ((options.cancel && options.cancel->load()) || past_deadline(options)) break;
      const Successor& s = x->take();
      auto applied = parent.applied;
      std::vector<NodeId> nodes;
      std::vector<std::string> names;
      auto next = build(g, s, options, max_size, applied, nodes, names);
      if (!next) continue;
      ev.rule = s.rule->name;
      ev.matched_nodes = std::move(nodes);
      ev.matched_names = std::move(names);
      ev.parameters = s.params;
      const Candidate* before = best;
      const Candidate* c = admit(std::move(*next), std::move(applied), x->changes);
      if (!c) continue;
      ++costed;
      emit(SearchEvent::Kind::CandidateCosted);
      if (best != before)
        emit(SearchEvent::Kind::NewBest);
      else if (c->cost.key() > options.alpha * best->cost.key())
        emit(SearchEvent::Kind::Pruned);
    }
    // The rest of the expansion waits behind every candidate at least as good as its parent.
    if (!x->done() && !out_of_budget)
      queue.push({parent.cost.key(), g.size(), queued++, nullptr, x});
    else
      x->successors = {};  // its matches are not needed any more
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
