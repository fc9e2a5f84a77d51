#include "unity/core/plan_optimizer.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "unity/core/candidate_cost.h"
#include "unity/core/data_parallel.h"
#include "unity/core/errors.h"
#include "unity/core/expert_strategies.h"
#include "unity/core/hierarchical_search.h"
#include "unity/core/layout_conversion.h"
#include "unity/core/model_loader.h"
#include "unity/core/model_zoo.h"
#include "unity/core/substitution_search.h"

namespace unity {
namespace {

RuleSet rules_for(const OptimizeOptions& options) {
  if (options.rule_files.empty()) return default_rules();
  RuleSet all;
  for (const auto& f : options.rule_files)
    for (auto& r : load_rule_file(f).rules) {
      if (all.find(r.name))
        throw InputError(
            fmt::format("{}: rule '{}' is already defined by an earlier rule file", f, r.name));
      all.rules.push_back(std::move(r));
    }
  return all;
}

std::vector<RuleLocation> locations(const std::vector<std::string>& texts, const RuleSet& rules,
                                    const char* flag) {
  std::vector<RuleLocation> out;
  for (const auto& text : texts) {
    RuleLocation l = parse_rule_location(text);
    if (l.rule.empty()) throw InputError(fmt::format("{} '{}': no rule name", flag, text));
    if (l.is_pattern()) {
      if (std::string_view(flag) == "--pin")
        throw InputError(fmt::format("--pin {}: a pin names one rule, not a pattern", l.rule));
      const bool any = std::any_of(rules.rules.begin(), rules.rules.end(),
                                   [&](const Rule& r) { return l.names(r.name); });
      if (!any)
        throw InputError(fmt::format("{} {}: no rule name matches that pattern", flag, l.rule));
    } else if (!rules.find(l.rule)) {
      throw InputError(fmt::format("{} {}: no rule has that name", flag, l.rule));
    }
    out.push_back(std::move(l));
  }
  return out;
}

// A finished plan candidate: the graph, its exact cost, and how it came about.
struct Outcome {
  Graph graph;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
  std::string origin;
};

bool better(const CandidateCost& a, const CandidateCost& b) { return a.key() < b.key(); }

class PlanSearch {
 public:
  PlanSearch(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options)
      : model_(model),
        machine_(machine),
        options_(options),
        costs_(machine, optimizer_from_string(options.optimizer), options.profiles) {}

  Plan run() {
    const auto started = std::chrono::steady_clock::now();
    Plan plan;
    plan.machine = machine_;
    auto& s = plan.summary;
    Outcome best;
    const auto& mode = options_.mode;
    if (mode == "data-parallel") {
      best.graph = make_data_parallel(model_, machine_.num_devices());
      best.cost = cost_candidate(best.graph, costs_);
      s.candidates_evaluated = 1;
    } else if (mode == "expert") {
      best = expert();
    } else if (mode == "joint" || mode == "sequential") {
      rules_ = rules_for(options_);
      pins_ = locations(options_.pins, rules_, "--pin");
      vetoes_ = locations(options_.vetoes, rules_, "--veto");
      best = mode == "joint" ? joint() : sequential();
      s.vetoed = options_.vetoes;
      s.pinned = options_.pins;
    } else {
      throw InputError(fmt::format(
          "unknown mode '{}' (expected joint, sequential, data-parallel or expert)", mode));
    }
    if (!best.cost.mapping.feasible)
      throw InputError(fmt::format("no machine mapping of '{}' fits {} devices", model_.name,
                                   machine_.num_devices()));
    plan.pcg = std::move(best.graph);
    plan.mapping = std::move(best.cost.mapping);
    s.substitutions_applied = std::move(best.applied);
    s.origin = best.origin;
    s.candidates_evaluated += candidates_;
    s.search_status = status_;
    s.pieces = pieces_;
    s.searches = searches_;

    s.model = model_.name;
    s.machine = machine_.name;
    s.devices = machine_.num_devices();
    s.mode = mode;
    s.optimizer = options_.optimizer;
    s.iteration_time_ms = plan.mapping.cost.time() * 1e3;
    s.compute_ms = plan.mapping.cost.compute * 1e3;
    s.communication_ms = plan.mapping.cost.communication * 1e3;
    s.communication_bytes = plan.mapping.cost.bytes;
    s.peak_memory_bytes = plan.mapping.peak_memory;
    s.fits_in_memory = plan.mapping.fits_in_memory;
    s.search_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    s.mapping_subproblems = plan.mapping.subproblems;
    for (const auto& [id, n] : plan.pcg.nodes()) {
      if (is_compute_op(n.op.type)) ++s.operators;
      if (is_parallel_op(n.op.type)) ++s.parallel_operators;
    }
    return plan;
  }

 private:
  // Applies the pins that belong to this phase everywhere they match.
  Graph pinned(const Graph& g, const std::string& kind, const std::vector<std::int64_t>& degrees,
               std::vector<AppliedSubstitution>& applied) const {
    Graph out = g;
    for (const auto& pin : pins_) {
      const Rule* rule = rules_.find(pin.rule);
      if (!kind.empty() && rule->kind != kind) continue;
      out = apply_everywhere(out, *rule, pin, degrees, applied);
    }
    return out;
  }

  // One hierarchical search (graph splitting over substitution selection over the mapping DP).
  Outcome search(const Graph& start, const CostModel& costs, const std::string& kind,
                 bool seed_data_parallel) {
    const MachineSpec& machine = costs.machine();
    HierarchicalOptions ho;
    ho.search.alpha = options_.alpha;
    ho.search.budget = options_.budget;
    ho.search.degrees = useful_degrees(machine);
    ho.search.devices = machine.num_devices();
    ho.search.vetoed = vetoes_;
    ho.search.kind = kind;
    ho.search.observer = quiet_ ? nullptr : options_.observer;
    ho.search.cancel = options_.cancel;
    ho.split = options_.split;
    ho.min_piece = options_.min_piece;
    ho.cache = options_.cache;
    // Searches priced on the whole machine share solved subgraphs (the one-device algebraic phase
    // of the sequential search has its own).
    if (&costs == &costs_) ho.shared_cache = &cache_;
    ho.beam = options_.beam;
    for (const auto& pin : pins_)
      if (kind.empty() || rules_.find(pin.rule)->kind == kind) ho.pins.push_back(pin);
    if (seed_data_parallel) ho.seed_degrees = ho.search.degrees;
    if (seed_data_parallel && kind.empty())
      for (auto& strategy : expert_strategies(start, machine)) {
        if (strategy.name.rfind("data-parallel", 0) == 0) continue;  // a seed already
        if (has_vetoed(strategy.applied)) continue;
        ho.whole_graph_starts.push_back(std::move(strategy.graph));
      }

    std::vector<AppliedSubstitution> applied;
    const Graph from = pinned(start, kind, ho.search.degrees, applied);
    // The pinned applications' nodes are kept from algebraic rules (which could undo them), and
    // the model's own nodes where a pinned rule still applies rank a candidate last.
    ho.pinned_below = start.next_id();
    for (auto it = from.nodes().lower_bound(start.next_id()); it != from.nodes().end(); ++it)
      ho.search.pinned.insert(it->first);
    const auto t0 = std::chrono::steady_clock::now();
    HierarchicalResult r = hierarchical_search(from, rules_, costs, ho);
    if (std::getenv("UNITY_DEBUG_SEARCH"))
      fmt::print(stderr, "hierarchical search {:.2f} s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // A quiet search leaves the summary alone: observers reconcile its counts and status with the
    // events they saw.
    if (!quiet_) {
      candidates_ += r.candidates_evaluated;
      searches_ += r.searches;
      pieces_ = std::max(pieces_, r.pieces);
      if (status_ != "cancelled") status_ = r.status;
    }
    applied.insert(applied.end(), r.applied.begin(), r.applied.end());
    Outcome o;
    // No candidate could be mapped (e.g. a model with parallel ops of a higher degree than a
    // one-device machine has devices): the start stands, and is costed as infeasible.
    o.graph = r.best.size() > 0 ? std::move(r.best) : from;
    o.applied = std::move(applied);
    o.cost = cost_candidate(o.graph, costs);
    return o;
  }

  // Starting points the search's space contains: when one of them, costed exactly, beats what the
  // (estimating, budgeted) search returned, the plan is that starting point, and says so. Pinned
  // rules apply to them too.
  void keep_best_start(Outcome& best, const Graph& serial, const std::string& kind) {
    const auto degrees = useful_degrees(machine_);
    for (auto d : degrees) {
      // The data-parallel baseline; lower degrees are starting points the search has covered.
      if (d != machine_.num_devices()) continue;
      try {
        Outcome o;
        o.graph = pinned(make_data_parallel(serial, static_cast<int>(d)), kind, degrees, o.applied);
        o.origin = fmt::format("data-parallel x{}", d);
        if (!still_pinned(o.graph)) continue;
        o.cost = cost_candidate(o.graph, costs_);
        if (better(o.cost, best.cost)) best = std::move(o);
      } catch (const InputError&) {
      }
    }
  }

  // Whether no pin still applies in `g` (a plan must contain every pinned application).
  bool still_pinned(const Graph& g) const {
    for (const auto& pin : pins_)
      if (matches_at(g, *rules_.find(pin.rule), pin, useful_degrees(machine_), model_.next_id()))
        return false;
    return true;
  }

  Outcome joint() {
    auto t0 = std::chrono::steady_clock::now();
    auto lap = [&](const char* what) {
      if (!std::getenv("UNITY_DEBUG_SEARCH")) return;
      const auto now = std::chrono::steady_clock::now();
      fmt::print(stderr, "joint: {} {:.2f} s\n", what,
                 std::chrono::duration<double>(now - t0).count());
      t0 = now;
    };
    Outcome best = search(model_, costs_, "", true);
    lap("search + final cost");
    keep_best_start(best, model_, "");
    lap("data-parallel start");
    // The expert strategies are points of the joint space too.
    for (auto& strategy : expert_strategies(model_, machine_)) {
      Outcome o;
      o.graph = std::move(strategy.graph);
      o.origin = "expert: " + strategy.name;
      o.applied = std::move(strategy.applied);
      if (!still_pinned(o.graph) || has_vetoed(o.applied)) continue;
      o.cost = cost_candidate(o.graph, costs_);
      if (better(o.cost, best.cost)) best = std::move(o);
    }
    lap("expert strategies");
    // The sequential pipeline's plan (algebraic rewrites, then parallelisation) is a point of the
    // joint space too, which the budgeted search does not always reach. Searched quietly: the
    // observer has seen the joint search end.
    if (status_ != "cancelled") {
      quiet_ = true;
      Outcome seq = sequential();
      quiet_ = false;
      if (seq.cost.mapping.feasible && better(seq.cost, best.cost)) {
        seq.origin = seq.origin.empty() ? "sequential search" : "sequential search, " + seq.origin;
        best = std::move(seq);
      }
    }
    lap("sequential plan");
    return best;
  }

  // An expert plan built with a vetoed rule (anywhere it applied) is not offered.
  bool has_vetoed(const std::vector<AppliedSubstitution>& applied) const {
    for (const auto& a : applied)
      for (const auto& v : vetoes_)
        if (v.covers(a.rule, a.nodes)) return true;
    return false;
  }

  Outcome sequential() {
    // TASO first: algebraic rules, costed on one device of the machine...
    const CostModel one(select_machine(machine_, {0, 1}), costs_.optimizer(), options_.profiles);
    Outcome algebraic = search(model_, one, "algebraic", false);
    // ...then FlexFlow: parallel rules only, on the algebraically optimised graph.
    Outcome parallel = search(algebraic.graph, costs_, "parallel", true);
    keep_best_start(parallel, algebraic.graph, "parallel");
    parallel.applied.insert(parallel.applied.begin(), algebraic.applied.begin(),
                            algebraic.applied.end());
    return parallel;
  }

  Outcome expert() {
    Outcome best;
    best.cost.time = std::numeric_limits<double>::infinity();
    best.cost.fits = false;
    best.cost.overflow = std::numeric_limits<double>::infinity();
    for (auto& strategy : expert_strategies(model_, machine_)) {
      Outcome o;
      o.graph = std::move(strategy.graph);
      o.origin = "expert: " + strategy.name;
      o.applied = std::move(strategy.applied);
      o.cost = cost_candidate(o.graph, costs_);
      if (std::getenv("UNITY_DEBUG_EXPERT"))
        fmt::print(stderr, "expert {}: {:.3f} ms, peak {:.2f} GB{}\n", o.origin, o.cost.time * 1e3,
                   o.cost.mapping.peak_memory / 1e9, o.cost.fits ? "" : " (does not fit)");
      ++candidates_;
      if (better(o.cost, best.cost)) best = std::move(o);
    }
    if (best.graph.size() == 0)
      throw InputError(fmt::format("no expert strategy applies to '{}' on {} devices", model_.name,
                                   machine_.num_devices()));
    return best;
  }

  const Graph& model_;
  const MachineSpec& machine_;
  const OptimizeOptions& options_;
  const CostModel costs_;
  RuleSet rules_;
  std::vector<RuleLocation> pins_, vetoes_;
  MappingCache cache_;  // for every search priced with costs_
  bool quiet_ = false;  // searches that report no events
  std::int64_t candidates_ = 0;
  int searches_ = 0, pieces_ = 1;
  std::string status_;
};

}  // namespace

Graph load_model_for_devices(const std::string& spec, int devices, std::int64_t batch) {
  if (batch > 0) return load_model(spec, batch);
  if (zoo::has_model(spec)) {
    for (const auto& m : zoo::models())
      if (m.name == spec) return zoo::build(spec, m.default_batch * devices);
  }
  return load_model(spec);
}

Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options) {
  return PlanSearch(model, machine, options).run();
}

}  // namespace unity
