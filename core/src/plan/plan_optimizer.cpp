#include "unity/core/plan/plan_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/launch/launch_limits.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/plan/memory_verdict.h"
#include "unity/core/plan/model_shape.h"
#include "unity/core/plan/search_mode.h"
#include "unity/core/search/candidate_cost.h"
#include "unity/core/search/hierarchical_search.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/search/substitution_search.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/strategies/expert_strategies.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {
namespace {

// How many of the plan's compute operators cost what `profiles` measured, and how many the
// analytic model's figures: those of its PCG and views, or, for a pipelined plan, those of each
// segment kind's replica (what the pipeline's stages were costed with).
void count_cost_sources(Plan& plan, const ProfileSource* profiles) {
  PlanSummary& s = plan.summary;
  s.measured_operators = s.analytic_operators = 0;
  const auto count = [&](const Graph& pcg, const std::map<NodeId, MachineView>& views) {
    for (const auto& [id, n] : pcg.nodes()) {
      if (!is_compute_op(n.op.type)) continue;
      const auto view = views.find(id);
      const int device =
          view != views.end() && view->second.num_tasks() > 0 ? view->second.device(0) : 0;
      const bool measured =
          profiles && profiles->lookup(pcg, id, plan.machine.device(device)).has_value();
      ++(measured ? s.measured_operators : s.analytic_operators);
    }
  };
  if (plan.pipeline && !plan.pipeline->kind_plans.empty()) {
    for (const auto& kind : plan.pipeline->kind_plans) count(kind.pcg, kind.views);
  } else {
    count(plan.pcg, plan.mapping.views);
  }
}

RuleSet rules_for(const OptimizeOptions& options) {
  if (options.rule_set) return *options.rule_set;
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
  std::optional<PipelinePlan> pipeline;  // a pipeline layout (graph: the serial model)
};

// A pipeline layout as a plan candidate, costed like the others (fitting first, then by time).
Outcome pipeline_outcome(const Graph& model, PipelinePlan p, const MachineSpec& machine,
                         std::string origin) {
  Outcome o;
  o.graph = model;
  o.origin = std::move(origin);
  o.applied = p.applied;
  o.cost.time = p.iteration_time;
  o.cost.fits = p.fits;
  o.cost.overflow = p.peak_memory / smallest_device_memory(machine);
  auto& m = o.cost.mapping;
  m.feasible = std::isfinite(p.iteration_time);
  m.cost.compute = p.compute_time;
  m.cost.communication = p.communication_time;
  m.cost.bytes = p.communication_bytes;
  m.peak_memory = p.peak_memory;
  m.fits_in_memory = p.fits;
  o.pipeline = std::move(p);
  return o;
}

std::string describe_layout(const PipelinePlan& p) {
  std::string text = fmt::format(
      "tp{}{} x pp{} x dp{}, {} micro-batch{} of {}", p.tensor_parallel,
      p.context_parallel > 1 ? fmt::format(" x cp{}", p.context_parallel) : "", p.pipeline_stages,
      p.data_parallel, p.micro_batches, p.micro_batches == 1 ? "" : "es", p.micro_batch_size);
  if (p.interleave > 1) text += fmt::format(", {} chunks per device", p.interleave);
  if (p.recompute != Recompute::None)
    text += fmt::format(", {} recomputation", describe_recompute(p.recompute, p.recompute_modules));
  if (p.zero_stage > 0) text += fmt::format(", ZeRO-{}", p.zero_stage);
  if (p.sequence_parallel) text += ", sequence-parallel";
  if (p.overlap_grad_reduce && p.data_parallel > 1) text += ", overlapped data-parallel reduce";
  if (p.tp_comm_overlap) text += ", tensor-parallel communication overlapped";
  if (p.context_parallel > 1)
    text +=
        fmt::format(", keys and values {}",
                    p.context_exchange == ContextExchange::Ring ? "ringed (p2p)" : "all-gathered");
  if (p.expert_parallel > 1) text += fmt::format(", ep{}", p.expert_parallel);
  if (p.expert_tensor_parallel > 1) text += fmt::format(", etp{}", p.expert_tensor_parallel);
  if (p.device_order != DeviceOrder::PipelineOutermost)
    text += fmt::format(", devices {}", to_string(p.device_order));
  return text;
}

bool better(const CandidateCost& a, const CandidateCost& b) { return a.key() < b.key(); }

class PlanSearch {
 public:
  PlanSearch(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options)
      : cpu_model_(float32_for_cpu_ranks(model, machine)),
        model_(cpu_model_ ? *cpu_model_ : model),
        machine_(machine),
        options_(options),
        optimizer_(resolved_optimizer(model, options)),
        costs_(machine, optimizer_from_string(optimizer_), options.profiles) {}

  Plan run() {
    const auto started = std::chrono::steady_clock::now();
    if (options_.time_limit_seconds > 0)
      deadline_ = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(options_.time_limit_seconds));
    Plan plan;
    plan.machine = machine_;
    auto& s = plan.summary;
    Outcome best;
    const std::string& mode = options_.mode;
    const SearchMode kind = search_mode_from_string(mode);
    // A launcher trains a decoder only (launch_spec.h): a plan for one of another model is none.
    if (options_.layout.launchable) {
      std::string why;
      if (!model_shape_of(model_, &why))
        throw InputError(fmt::format(
            "--launchable: '{}' is not a decoder-only transformer ({}); Megatron-LM, torchtitan "
            "and DeepSpeed's launchers train GPT and Llama-style decoders",
            model_.name, why));
    }
    if (!options_.layout.empty() && kind != SearchMode::Expert && kind != SearchMode::Joint)
      throw InputError(
          fmt::format("{} is a pipeline layout: it takes --mode expert (that layout) "
                      "or --mode joint (searched around it), not --mode {}",
                      options_.layout.describe(), mode));
    if (kind == SearchMode::DataParallel) {
      best.graph = make_data_parallel(model_, machine_.num_devices());
      best.cost = cost_candidate(best.graph, costs_);
      s.candidates_evaluated = 1;
    } else if (kind == SearchMode::Expert) {
      if (!options_.pins.empty()) {
        rules_ = rules_for(options_);
        pins_ = locations(options_.pins, rules_, "--pin");
        for (const auto& pin : pins_)
          if (rules_.find(pin.rule)->kind != RuleKind::Algebraic)
            throw InputError(fmt::format(
                "--pin {}: --mode expert lays out its own parallelism and applies algebraic "
                "rules only (such as fuse_attention); search with it in --mode joint",
                pin.rule));
        s.pinned = options_.pins;
      }
      best = options_.layout.empty() ? expert() : pipelined(false);
    } else {
      rules_ = rules_for(options_);
      pins_ = locations(options_.pins, rules_, "--pin");
      vetoes_ = locations(options_.vetoes, rules_, "--veto");
      if (kind == SearchMode::Sequential)
        for (const auto& pin : pins_)
          if (rules_.find(pin.rule)->kind == RuleKind::Joint)
            throw InputError(fmt::format(
                "--pin {}: a joint rule (it changes the algebra and the split in one step) is "
                "applied by --mode joint only, not by either phase of --mode sequential",
                pin.rule));
      best = kind == SearchMode::Sequential ? sequential()
             : options_.layout.empty()      ? joint()
                                            : pipelined(true);
      s.vetoed = options_.vetoes;
      s.pinned = options_.pins;
    }
    if (!best.cost.mapping.feasible)
      throw InputError(fmt::format("no machine mapping of '{}' fits {} devices", model_.name,
                                   machine_.num_devices()));
    plan.pcg = std::move(best.graph);
    plan.mapping = std::move(best.cost.mapping);
    plan.pipeline = std::move(best.pipeline);
    s.substitutions_applied = std::move(best.applied);
    s.origin = best.origin;
    s.candidates_evaluated += candidates_;
    s.search_status = status_;
    s.pieces = pieces_;
    s.searches = searches_;

    s.model = model_.name;
    s.model_shape = model_shape_of(model_);
    s.machine = machine_.name;
    s.devices = machine_.num_devices();
    s.mode = mode;
    s.optimizer = optimizer_;
    s.iteration_time_ms = plan.mapping.cost.time() * 1e3;
    s.compute_ms = plan.mapping.cost.compute * 1e3;
    s.communication_ms = plan.mapping.cost.communication * 1e3;
    s.communication_bytes = plan.mapping.cost.bytes;
    s.peak_memory_bytes = plan.mapping.peak_memory;
    s.fits_in_memory = plan.mapping.fits_in_memory;
    const MemoryVerdict memory =
        plan_memory_verdict(s.peak_memory_bytes, s.fits_in_memory, machine_);
    s.memory_verdict = to_string(memory.fit);
    s.memory_margin_bytes = memory.margin;
    const ModelStateFloor floor =
        model_state_floor(static_cast<double>(model_.parameter_count()), compute_dtype(model_),
                          optimizer_from_string(optimizer_), memory.capacity);
    s.model_state_bytes = floor.bytes;
    s.fewest_devices_for_state = floor.devices;
    s.search_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    s.mapping_subproblems = plan.mapping.subproblems;
    for (const auto& [id, n] : plan.pcg.nodes()) {
      if (is_compute_op(n.op.type)) ++s.operators;
      if (is_parallel_op(n.op.type)) ++s.parallel_operators;
    }
    count_cost_sources(plan, options_.profiles.get());
    // fp8 where the GEMMs run so: a device without an fp8 peak runs them in bf16.
    s.dtype = has_fp8_gemms(model_) && machine_.device(0).peak_flops_fp8 > 0
                  ? "fp8"
                  : std::string(to_string(compute_dtype(model_)));
    if (const auto& p = plan.pipeline) {
      s.pipeline_stages = p->pipeline_stages;
      s.micro_batches = p->micro_batches;
      s.bubble_fraction = p->bubble_fraction;
      s.recompute = to_string(p->recompute);
      if (p->recompute == Recompute::Selective)
        s.recompute_modules = to_string(p->recompute_modules);
      s.zero_stage = p->zero_stage;
      // Megatron-Core's expert grid, as a launch states it.
      if (p->experts > 0) {
        const PipelinePlan::ExpertGrid g = p->expert_grid();
        s.ep = g.ep;
        s.etp = g.etp;
        s.edp = g.edp;
      }
      s.alltoall_bytes = p->alltoall_bytes;
      s.cp = p->context_parallel;
      s.cp_bytes = p->cp_bytes;
      s.model_flops_per_iteration = p->model_flops;
    } else {
      s.model_flops_per_iteration = 3 * dense_forward_flops(model_, options_.flop_count);
    }
    s.flop_count = to_string(options_.flop_count);
    if (s.iteration_time_ms > 0)
      s.tflops_per_device =
          s.model_flops_per_iteration / (s.iteration_time_ms / 1e3) / s.devices / 1e12;
    return plan;
  }

 private:
  // Applies the pins that belong to this phase everywhere they match.
  Graph pinned(const Graph& g, std::optional<RuleKind> kind,
               const std::vector<std::int64_t>& degrees,
               std::vector<AppliedSubstitution>& applied) const {
    Graph out = g;
    for (const auto& pin : pins_) {
      const Rule* rule = rules_.find(pin.rule);
      if (kind && rule->kind != *kind) continue;
      out = apply_everywhere(out, *rule, pin, degrees, applied);
    }
    return out;
  }

  // The model as expert and pipeline layouts lay it out: with its algebraic pins applied (a pinned
  // fusion is in every stage); parallel pins are the whole-graph search's.
  Graph algebraically_pinned_model(std::vector<AppliedSubstitution>& applied) const {
    return pinned(model_, RuleKind::Algebraic, useful_degrees(machine_), applied);
  }

  // One hierarchical search (graph splitting over substitution selection over the mapping DP).
  // `budget_share`: of OptimizeOptions::budget, what each of its substitution searches may cost.
  // `phase` names it in its events.
  Outcome search(const std::string& phase, const Graph& start, const CostModel& costs,
                 std::optional<RuleKind> kind, bool seed_data_parallel, double budget_share = 1.0) {
    const MachineSpec& machine = costs.machine();
    HierarchicalOptions ho;
    ho.search.scope.phase = phase;
    ho.search.alpha = options_.alpha;
    ho.search.budget = std::max<std::int64_t>(
        8, static_cast<std::int64_t>(std::llround(options_.budget * budget_share)));
    ho.search.degrees = useful_degrees(machine);
    ho.search.devices = machine.num_devices();
    ho.search.vetoed = vetoes_;
    ho.search.kind = kind;
    ho.search.observer = quiet_ ? nullptr : options_.observer;
    ho.search.cancel = options_.cancel;
    ho.search.deadline = search_deadline_;
    ho.split = options_.split;
    ho.min_piece = options_.min_piece;
    ho.cache = options_.cache;
    // Searches priced on the whole machine share solved subgraphs (the one-device algebraic phase
    // of the sequential search has its own).
    if (&costs == &costs_) ho.shared_cache = &cache_;
    ho.beam = options_.beam;
    for (const auto& pin : pins_)
      if (!kind || rules_.find(pin.rule)->kind == *kind) ho.pins.push_back(pin);
    if (seed_data_parallel) ho.seed_degrees = ho.search.degrees;
    if (seed_data_parallel && !kind)
      for (auto& strategy : expert_strategies(start, machine)) {
        if (strategy.name.rfind("data-parallel", 0) == 0) continue;  // a seed already
        if (has_vetoed(strategy.applied) || outside_rules(strategy.applied)) continue;
        ho.whole_graph_starts.push_back(std::move(strategy.graph));
      }

    std::vector<AppliedSubstitution> applied;
    const Graph from = pinned(start, kind, ho.search.degrees, applied);
    // The pinned applications' nodes are kept from algebraic rules (which could undo them), and
    // the model's own nodes where a pinned rule still applies rank a candidate last.
    ho.pinned_below = start.next_id();
    for (auto it = from.nodes().lower_bound(start.next_id()); it != from.nodes().end(); ++it)
      ho.search.pinned.insert(it->first);
    HierarchicalResult r = hierarchical_search(from, rules_, costs, ho);
    // A quiet search leaves the summary alone: observers reconcile its counts and status with the
    // events they saw.
    if (!quiet_) {
      candidates_ += r.candidates_evaluated;
      searches_ += r.searches;
      pieces_ = std::max(pieces_, r.pieces);
      if (status_ != "cancelled" && status_ != "time limit") status_ = r.status;
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
  void keep_best_start(Outcome& best, const Graph& serial, std::optional<RuleKind> kind) {
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

  // A pipeline layout: Megatron-LM's tensor parallelism in each stage (expert), or each segment
  // kind searched jointly on its stage replica (joint), with the rest of the layout searched.
  // `share`: of the time left, what the layout search may take.
  Outcome pipelined(bool joint, double share = 1.0) {
    std::vector<AppliedSubstitution> pinned_applied;
    const Graph model = algebraically_pinned_model(pinned_applied);
    PipelineOptions po;
    po.joint = joint;
    po.request = options_.layout;
    po.optimizer = costs_.optimizer();
    po.rules = joint ? &rules_ : nullptr;
    po.alpha = options_.alpha;
    po.budget = options_.budget;
    po.vetoes = vetoes_;
    po.cancel = options_.cancel;
    share_time(share);
    po.deadline = deadline_ ? search_deadline_ : std::nullopt;
    po.profiles = options_.profiles;
    po.flop_count = options_.flop_count;
    std::string refused_batch;
    po.refused_batch = &refused_batch;
    auto p = plan_pipeline(model, machine_, po);
    if (!p)
      throw InputError(fmt::format(
          "no pipeline layout of '{}' (batch {}) on {} devices{}{}{}", model_.name,
          model_.batch_size, machine_.num_devices(), options_.layout.empty() ? "" : " with ",
          options_.layout.describe(), refused_batch.empty() ? "" : "; refused " + refused_batch));
    const std::string origin =
        fmt::format("{}: {}", joint ? "layout search" : "megatron", describe_layout(*p));
    Outcome o = pipeline_outcome(model, std::move(*p), machine_, origin);
    o.applied.insert(o.applied.begin(), pinned_applied.begin(), pinned_applied.end());
    return o;
  }

  // Pipeline layouts are offered to models with a chain of segments on more than one device
  // (cutting the model into segments is decided once: every mode asks more than once).
  bool pipelines() {
    if (!pipelines_)
      pipelines_ = options_.pipelines && machine_.num_devices() > 1 && can_pipeline(model_);
    return *pipelines_;
  }

  // Whether the whole PCG is also searched operator by operator over every device. The pipeline
  // planner plans one layer per kind and covers the layouts without stages too; past the scale
  // where a whole-graph mapping stays cheap (the paper's searches reach 192 GPUs; ours 512), it
  // alone plans models it can pipeline.
  bool whole_graph() { return !pipelines() || machine_.num_devices() <= kWholeGraphDevices; }
  static constexpr int kWholeGraphDevices = 512;

  void keep_pipelined(Outcome& best, bool joint, double share = 1.0) {
    if (!pipelines() || status_ == "cancelled") return;
    Outcome o;
    try {
      o = pipelined(joint, share);
    } catch (const InputError&) {
      return;  // no layout of the model's batch on these devices
    }
    if (o.cost.mapping.feasible && (best.graph.size() == 0 || better(o.cost, best.cost)))
      best = std::move(o);
  }

  // Of OptimizeOptions::budget, what each substitution search from the model as given and the
  // seeding cost (the search from the seed has the whole budget): the joint search then takes about
  // the time one search from the model and a sequential run did, and its plans are at least as fast
  // as the sequential pipeline's on every zoo model and machine size of the README's Figure 15b
  // table. (With 0.6 for both searches dlrm on 96 GPUs stayed 1.6% behind; with the whole budget
  // for both, ResNeXt-50 and Inception-v3 took 35-45% longer.)
  static constexpr double kUnseededBudgetShare = 0.5;

  // The joint search (paper 5) over algebraic and parallel rules together, from two graphs: the
  // model as given, and the model after the algebraic rewrites that pay on one device. The second
  // start is a seed, not an answer: a budgeted best-first search from the model reaches fusions
  // only through candidates that pay on the whole machine at every step (a fused Linear+ReLU is
  // worth a little more than its parts, and the search spends its budget parallelising the unfused
  // pair first), and from the seed it still unfuses, reorders and parallelises with every rule. The
  // baselines (data parallelism, the expert strategies) are costed beside it and win only by their
  // own origin; the sequential pipeline is a mode of its own. The pipeline layouts are searched
  // first: for a chain of layers they are the plan, and the whole-graph searches and baselines,
  // costed on every device, can take the whole time limit on a large NVLink domain (a GB200 NVL72
  // rack's 72 GPUs).
  Outcome joint() {
    Outcome pipelined;
    keep_pipelined(pipelined, true, whole_graph() ? 0.5 : 1.0);
    if (!whole_graph()) return pipelined;
    share_time(0.45);
    Outcome best = search("joint search from the model", model_, costs_, std::nullopt, true,
                          kUnseededBudgetShare);
    // The first search stopping at its share of the time leaves the rest to the seeded search.
    if (status_ != "cancelled" && time_left()) {
      // Seeding: quiet (its one-device costs are not the search's), and not counted.
      share_time(0.15);
      quiet_ = true;
      const Outcome algebraic = algebraic_rewrites(kUnseededBudgetShare);
      quiet_ = false;
      if (algebraic.graph.structural_hash() != model_.structural_hash()) {
        share_time(1.0);
        Outcome seeded = search("joint search from the algebraic rewrites", algebraic.graph, costs_,
                                std::nullopt, true);
        seeded.applied.insert(seeded.applied.begin(), algebraic.applied.begin(),
                              algebraic.applied.end());
        if (better(seeded.cost, best.cost)) best = std::move(seeded);
      }
    }
    best.origin = "joint search";
    if (options_.baselines) keep_baselines(best);
    if (pipelined.graph.size() != 0 && better(pipelined.cost, best.cost))
      best = std::move(pipelined);
    return best;
  }

  // Data parallelism and the expert strategies, costed exactly beside the search's plan (which was
  // chosen by estimates): the faster wins, and says where it came from.
  void keep_baselines(Outcome& best) {
    keep_best_start(best, model_, std::nullopt);
    // Building the strategies and costing each (a whole-graph mapping) is bounded by the time
    // limit too: on a 72-GPU NVLink domain either takes seconds.
    if (!time_left()) return;
    for (auto& strategy : expert_strategies(model_, machine_)) {
      if (!time_left()) break;
      Outcome o;
      o.graph = std::move(strategy.graph);
      o.origin = "expert: " + strategy.name;
      o.applied = std::move(strategy.applied);
      if (!still_pinned(o.graph) || has_vetoed(o.applied) || outside_rules(o.applied)) continue;
      o.cost = cost_candidate(o.graph, costs_);
      if (better(o.cost, best.cost)) best = std::move(o);
    }
  }

  // An expert plan built with a rule the search was not given is not a point of its space.
  bool outside_rules(const std::vector<AppliedSubstitution>& applied) const {
    return std::any_of(applied.begin(), applied.end(),
                       [&](const AppliedSubstitution& a) { return !rules_.find(a.rule); });
  }

  // An expert plan built with a vetoed rule (anywhere it applied) is not offered.
  bool has_vetoed(const std::vector<AppliedSubstitution>& applied) const {
    for (const auto& a : applied)
      for (const auto& v : vetoes_)
        if (v.covers(a.rule, a.nodes)) return true;
    return false;
  }

  // TASO's phase: the model under algebraic rules only, costed on one device of the machine.
  Outcome algebraic_rewrites(double budget_share = 1.0) {
    const CostModel one(select_machine(machine_, {0, 1}), costs_.optimizer(), options_.profiles);
    return search("algebraic rewrites on one device", model_, one, RuleKind::Algebraic, false,
                  budget_share);
  }

  Outcome sequential() {
    // TASO first...
    share_time(0.35);
    Outcome algebraic = algebraic_rewrites();
    share_time(1.0);
    // ...then FlexFlow: parallel rules only, on the algebraically optimised graph.
    Outcome parallel = search("parallelization of the rewritten model", algebraic.graph, costs_,
                              RuleKind::Parallel, true);
    keep_best_start(parallel, algebraic.graph, RuleKind::Parallel);
    parallel.applied.insert(parallel.applied.begin(), algebraic.applied.begin(),
                            algebraic.applied.end());
    return parallel;
  }

  Outcome expert() {
    Outcome best;
    best.cost.time = std::numeric_limits<double>::infinity();
    best.cost.fits = false;
    best.cost.overflow = std::numeric_limits<double>::infinity();
    // Megatron-LM's layouts with pipeline stages, for transformers.
    if (has_attention(model_)) keep_pipelined(best, false);
    if (!whole_graph()) return best;
    std::vector<AppliedSubstitution> pinned_applied;
    const Graph model = algebraically_pinned_model(pinned_applied);
    for (auto& strategy : expert_strategies(model, machine_)) {
      Outcome o;
      o.graph = std::move(strategy.graph);
      o.origin = "expert: " + strategy.name;
      o.applied = pinned_applied;
      o.applied.insert(o.applied.end(), strategy.applied.begin(), strategy.applied.end());
      o.cost = cost_candidate(o.graph, costs_);
      ++candidates_;
      if (better(o.cost, best.cost)) best = std::move(o);
    }
    if (best.graph.size() == 0)
      throw InputError(fmt::format("no expert strategy applies to '{}' on {} devices", model_.name,
                                   machine_.num_devices()));
    return best;
  }

  // Unity's CPU backend computes every float tensor in float32: a half-precision model is planned
  // for CPU ranks as it runs there, its memory, traffic and messages those of float32 tensors.
  static std::optional<Graph> float32_for_cpu_ranks(const Graph& model,
                                                    const MachineSpec& machine) {
    if (size_of(compute_dtype(model)) >= 4 || has_fp8_gemms(model)) return std::nullopt;
    for (const auto& d : machine.device_types)
      if (d.kind != "cpu") return std::nullopt;
    Graph g = model;
    set_compute_dtype(g, DataType::Float32);
    return g;
  }

  const std::optional<Graph> cpu_model_;
  const Graph& model_;
  const MachineSpec& machine_;
  const OptimizeOptions& options_;
  const std::string optimizer_;
  const CostModel costs_;
  RuleSet rules_;
  std::vector<RuleLocation> pins_, vetoes_;
  MappingCache cache_;  // for every search priced with costs_
  bool quiet_ = false;  // searches that report no events
  std::optional<bool> pipelines_;
  std::int64_t candidates_ = 0;
  int searches_ = 0, pieces_ = 1;
  std::string status_;
  // When the running search must stop (OptimizeOptions::time_limit_seconds); none: no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline_, search_deadline_;

  bool time_left() const { return !deadline_ || std::chrono::steady_clock::now() < *deadline_; }

  // Gives the next search `share` of the time left (the rest goes to the searches after it).
  void share_time(double share) {
    if (!deadline_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto left = *deadline_ > now ? *deadline_ - now : std::chrono::steady_clock::duration{0};
    search_deadline_ =
        now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left * share);
  }
};

}  // namespace

Graph load_model_for_devices(const std::string& spec, int devices, std::int64_t batch,
                             const zoo::TransformerResize& resize) {
  if (zoo::has_model(spec)) {
    if (batch > 0) return zoo::build(spec, batch, resize);
    for (const auto& m : zoo::models())
      if (m.name == spec) return zoo::build(spec, m.default_batch * devices, resize);
  }
  // A Hugging Face config: one sequence per device unless `batch` says; other model files refuse
  // a resize.
  return load_model(spec, batch, resize, devices);
}

std::string resolved_optimizer(const Graph& model, const OptimizeOptions& options) {
  if (!options.optimizer.empty()) return options.optimizer;
  return size_of(compute_dtype(model)) < 4 ? "adam" : "sgd";
}

Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options) {
  if (options.layout.launcher.empty()) return PlanSearch(model, machine, options).run();
  // --launcher F: what F lacks for this model in particular too (a torchtitan flavor's).
  OptimizeOptions limited = options;
  launch::limit_to_model(limited.layout, model);
  return PlanSearch(model, machine, limited).run();
}

}  // namespace unity
