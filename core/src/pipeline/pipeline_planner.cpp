#include "unity/core/pipeline/pipeline_planner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "layout_space.h"
#include "pipeline_chunks.h"
#include "pipeline_tied_tables.h"
#include "unity/core/errors.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/pipeline/segment_outputs.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/search/candidate_cost.h"
#include "unity/core/search/hierarchical_search.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/strategies/expert_strategies.h"

namespace unity {
namespace {

using pipeline_layouts::kTpOverlapSms;
using pipeline_layouts::kTpOverlapSplits;
using pipeline_layouts::Layout;
using pipeline_layouts::LayoutGrid;
using pipeline_layouts::LayoutSpace;

// SMs DeepEP's kernels (and NCCL's all-to-all) hold while they run beside compute: DeepEP's
// Buffer default (num_sms = 20).
constexpr int kExpertCommSms = 20;

// SMs that NCCL's data-parallel collectives hold while they overlap compute: one thread block per
// channel, and as many channels as Transformer Engine gives its overlap (NCCL_MAX_NCHANNELS caps
// them on a real run).
constexpr int kNcclSms = 16;

// How much slower than the joint search's own segment plans Megatron-LM's split of the same
// layout may be and still be chosen, as a plan a launcher can run: half a percent, well inside
// what the cost model can tell apart (docs/accuracy.md: its closest rows are off by 0-3%).
constexpr double kRunnableTolerance = 0.005;

// A segment kind planned on the devices of one stage replica.
struct KindPlan {
  Graph plan;
  std::int64_t batch = 0;
  std::string description;
  std::vector<AppliedSubstitution> applied;
  // The expert weight elements one device of the replica holds (its Experts operators' weight
  // pieces), which expert parallelism replaces by its own share.
  double expert_parameters = 0;
  double expert_fp8_parameters = 0;  // of those, read by GEMMs that run in fp8
};

class Planner {
 public:
  Planner(const Graph& model, const MachineSpec& machine, const PipelineOptions& options)
      : model_(model),
        machine_(machine),
        options_(options),
        chain_(segment_chain(model)),
        tied_(model, chain_),
        costs_(machine, options.optimizer, options.profiles),
        dtype_(compute_dtype(model)) {
    const int segments = static_cast<int>(chain_.segments.size());
    const std::vector<bool> repeated = repeated_kinds(chain_);
    for (int j = 0; j < segments; ++j) {
      const auto& s = chain_.segments[j];
      const int next = j + 1 < segments ? chain_.segments[j + 1].layer : chain_.layers;
      layer_of_.push_back(std::max(0, next > s.layer ? s.layer : s.layer - 1));
      block_.push_back(repeated[static_cast<std::size_t>(s.kind)]);
    }
    // The layers Megatron-LM deals to the chunks: the transformer's, and where asked the
    // embedding before the first block and the loss after the last, each one more.
    const auto first_block = std::find(block_.begin(), block_.end(), true) - block_.begin();
    const auto last_block = block_.rend() - std::find(block_.rbegin(), block_.rend(), true) - 1;
    const auto& r = options_.request;
    if (r.grad_reduce_in_bf16 && size_of(dtype_) != 2)
      throw InputError(
          fmt::format("--grad-reduce-in-bf16 needs a bf16 or fp8 model; '{}' computes in {}",
                      model_.name, to_string(dtype_)));
    if (r.fp8_param_gather &&
        std::none_of(model_.nodes().begin(), model_.nodes().end(), [&](const auto& entry) {
          return runs_fp8_gemms(entry.second, machine_.device(0));
        }))
      throw InputError(
          "--fp8-param-gather keeps the weights of fp8 GEMMs in fp8: it needs --dtype fp8 on a "
          "device with an fp8 peak");
    const int shift = r.embedding_in_split ? 1 : 0;
    split_layers_ = chain_.layers + shift + (r.loss_in_split ? 1 : 0);
    // Without repeated blocks (an imported model of distinct layers), every segment is dealt by
    // its own layer.
    const bool blocks = first_block < segments;
    for (int j = 0; j < segments; ++j)
      split_layer_of_.push_back(blocks && j < first_block           ? 0
                                : j > last_block && r.loss_in_split ? chain_.layers + shift
                                                                    : layer_of_[j] + shift);
    segments_of_.assign(static_cast<std::size_t>(chain_.kinds()), {0, 0});
    for (int j = 0; j < segments; ++j)
      ++segments_of_[static_cast<std::size_t>(chain_.segments[j].kind)][block_[j] ? 1 : 0];
    // Sequence parallelism splits token-wise operators along a sequence: a transformer's.
    transformer_ = has_attention(model);
    // Context parallelism splits the attentions' sequence (the first one's: a decoder's are one);
    // tensor parallelism splits every attention's heads and key/value groups evenly.
    for (const auto& [id, n] : model.nodes()) {
      if (!is_attention(n.op.type)) continue;
      if (sequence_ == 0) sequence_ = model.shape(n.inputs[0]).dims[1].size;
      if (const std::int64_t window = n.op.attrs.get_int("window", 0);
          window > 0 && window < model.shape(n.inputs[0]).dims[1].size)
        sliding_window_ = true;
      if (n.op.type == OpType::LatentAttention) latent_attention_ = true;
      if (n.op.attrs.has("num_heads")) {
        const std::int64_t heads = n.op.attrs.get_int("num_heads");
        head_groups_ =
            std::gcd(head_groups_, std::gcd(heads, n.op.attrs.get_int("num_kv_heads", heads)));
      }
    }
    for (const auto& [id, n] : model.nodes()) {
      if (n.op.type == OpType::BatchNorm && batch_statistics_.empty())
        batch_statistics_ = model.describe(id);
      if (n.op.type == OpType::Experts) {
        experts_ = model.shape(n.inputs[2]).dims[0].size;
        top_k_ = n.op.attrs.get_int("top_k");
        route_groups_ = n.op.attrs.get_int("route_groups", 0);
        route_group_top_k_ = n.op.attrs.get_int("route_group_top_k", 0);
      }
    }
    memory_ = smallest_device_memory(machine);
  }

  std::optional<PipelinePlan> run() {
    const LayoutSpace space(
        {.model = model_.name,
         .batch = model_.batch_size,
         .segments = static_cast<int>(chain_.segments.size()),
         .layers = split_layers_,
         .sequence = sequence_,
         .head_groups = head_groups_,
         .experts = experts_,
         .transformer = transformer_,
         .sliding_window = sliding_window_,
         .latent_attention = latent_attention_,
         .grouped_gemm = dtype_ == DataType::BFloat16,
         .half_precision = dtype_ == DataType::BFloat16 || dtype_ == DataType::Float16,
         .joint = options_.joint,
         .batch_statistics = batch_statistics_},
        options_.request, machine_);
    std::optional<PipelinePlan> best;
    double best_key = kInfinity;
    std::int64_t best_index = 0;
    Layout best_layout;
    bool stopped = false;
    // The plan of the layout at enumeration index `index`: kept when it is better than the best
    // so far, or as good and earlier in the enumeration (an in-order search's choice).
    auto consider = [&](const Layout& l, std::int64_t index) {
      PipelinePlan p = evaluate(l);
      ++evaluated_;
      const double k = key(p);
      if (!best || k < best_key || (k == best_key && index < best_index)) {
        best = std::move(p);
        best_key = k;
        best_index = index;
        best_layout = l;
      }
    };
    auto stop = [&] {
      stopped =
          stopped || (options_.cancel && options_.cancel->load()) ||
          (best && options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline);
      return stopped;
    };
    // Whether a layout whose key is at least `bound` can still be chosen.
    auto may_win = [&](double bound, std::int64_t index) {
      return !best || bound < best_key || (bound == best_key && index < best_index);
    };
    if (options_.exhaustive) {
      for (const LayoutGrid& g : space.grids())
        for (std::int64_t i = 0; i < space.count(g) && !stop(); ++i)
          if (const Layout l = space.layout(g, i); space.takes(l)) consider(l, g.first + i);
    } else {
      // Best-first: every grid's lower bound (its layouts' least), then the grids in that order,
      // each layout costed only where its own bound can beat the best plan so far.
      const std::vector<double> bounds = grid_bounds(space);
      std::vector<std::size_t> order(bounds.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return bounds[a] < bounds[b]; });
      for (std::size_t gi : order) {
        const LayoutGrid& g = space.grids()[gi];
        if (stop() || !may_win(bounds[gi], g.first)) {
          if (stopped) break;
          continue;
        }
        for (std::int64_t i = 0; i < space.count(g) && !stop(); ++i) {
          const Layout l = space.layout(g, i);
          if (space.takes(l) && may_win(bound(l), g.first + i)) consider(l, g.first + i);
        }
      }
    }
    if (!best || !std::isfinite(best->iteration_time)) return std::nullopt;
    // Within kRunnableTolerance of the search's own segment plans, Megatron-LM's split of the same
    // layout is taken: a launcher can run it (unity export), and the cost model cannot tell
    // plans that close apart.
    if (!best_layout.megatron_segments && options_.joint && best->fits) {
      Layout runnable = best_layout;
      runnable.megatron_segments = true;
      // Not counted in layouts_evaluated: the same layout, costed again with the other split.
      PipelinePlan p = evaluate(runnable);
      if (p.fits && p.iteration_time <= best->iteration_time * (1 + kRunnableTolerance)) {
        best = std::move(p);
        best_layout = runnable;
      }
    }
    const bool megatron_segments = best_layout.megatron_segments;
    best->layouts_evaluated = evaluated_;
    best->candidates_evaluated = candidates_;
    // What each kind's replica plan is, for the layout chosen.
    for (int k = 0; k < chain_.kinds(); ++k) {
      const KindPlan& kp = kind_plan(k, best->tensor_parallel, best->micro_batch_size,
                                     megatron_segments, best_layout.etp > 1);
      best->segment_plans.push_back(fmt::format(
          "segments like '{}': {}", first_name(chain_.representative[k]), kp.description));
      best->applied.insert(best->applied.end(), kp.applied.begin(), kp.applied.end());
      const MappingCost costs(kp.plan, replica_costs(best->tensor_parallel));
      best->kind_plans.push_back({kp.plan, optimize_machine_mapping(costs).views});
    }
    return best;
  }

 private:
  static double key(const PipelinePlan& p) {
    return p.fits ? p.iteration_time : 1e9 + p.peak_memory;
  }

  std::string first_name(int segment) const {
    return model_.node(chain_.segments[segment].nodes.front()).op.name;
  }

  // The experts of one segment kind: weight elements in all (serial), the Experts operators, and
  // one Experts operator's tokens per sample, top-k and hidden size (the all-to-all's message).
  struct KindExperts {
    double parameters = 0;
    int operators = 0;
    double tokens_per_sample = 0, top_k = 0, hidden = 0;
  };
  const KindExperts& kind_experts(int kind) {
    if (auto it = experts_of_.find(kind); it != experts_of_.end()) return it->second;
    KindExperts e;
    const Segment& s = chain_.segments[chain_.representative[kind]];
    for (NodeId id : s.nodes) {
      const Node& n = model_.node(id);
      if (n.op.type != OpType::Experts) continue;
      ++e.operators;
      for (std::size_t slot = 2; slot < n.inputs.size(); ++slot)
        e.parameters += static_cast<double>(model_.shape(n.inputs[slot]).num_elements());
      const auto& x = model_.shape(n.inputs[0]);
      e.hidden = static_cast<double>(x.dims.back().size);
      e.tokens_per_sample = static_cast<double>(x.num_elements()) / e.hidden /
                            static_cast<double>(std::max<std::int64_t>(1, model_.batch_size));
      e.top_k = static_cast<double>(n.op.attrs.get_int("top_k"));
    }
    return experts_of_.emplace(kind, e).first->second;
  }

  const CostModel& replica_costs(int tp) {
    auto it = replica_costs_.find(tp);
    if (it != replica_costs_.end()) return *it->second;
    auto model = std::make_unique<CostModel>(select_machine(machine_, {0, tp}), options_.optimizer,
                                             options_.profiles);
    model->set_counts_weight_updates(false);
    return *replica_costs_.emplace(tp, std::move(model)).first->second;
  }

  // The joint search's rules.
  const RuleSet& rules() const { return options_.rules ? *options_.rules : default_rules(); }

  // Whether the joint search's rules, less the vetoed ones, hold an applied substitution.
  bool rule_allowed(const AppliedSubstitution& a) const {
    if (!rules().find(a.rule)) return false;
    return std::none_of(options_.vetoes.begin(), options_.vetoes.end(),
                        [&](const RuleLocation& v) { return v.covers(a.rule, a.nodes); });
  }

  // The plan of segment kind `kind` on `tp` devices, made for micro-batches of `b` samples (its
  // experts split by width where `by_width`: Megatron-LM's split with ETP = tp).
  KindPlan make_kind_plan(int kind, int tp, std::int64_t b, bool megatron_only, bool by_width) {
    const Segment& s = chain_.segments[chain_.representative[kind]];
    const Graph serial = segment_graph(model_, s, b);
    if (options_.joint && megatron_only) {
      // Megatron-LM's split of the segment with the algebraic rewrites the joint search chose
      // for it (a fused attention kernel, say).
      std::vector<AppliedSubstitution> applied;
      Graph rewritten = serial;
      for (const auto& a : kind_plan(kind, tp, b, false, false).applied) {
        const Rule* rule = rules().find(a.rule);
        if (!rule || rule->kind != RuleKind::Algebraic) continue;
        if (std::any_of(applied.begin(), applied.end(),
                        [&](const AppliedSubstitution& done) { return done.rule == a.rule; }))
          continue;
        const std::size_t before = applied.size();
        rewritten = apply_everywhere(rewritten, *rule, {a.rule, ""}, {1}, applied);
        for (std::size_t i = before; i < applied.size(); ++i) applied[i].pinned = a.pinned;
      }
      ExpertStrategy megatron = megatron_tensor_parallel(rewritten, tp, by_width);
      // Only where the search's rules, less the vetoed ones, can make it.
      if (!std::all_of(megatron.applied.begin(), megatron.applied.end(),
                       [&](const AppliedSubstitution& a) { return rule_allowed(a); }))
        return kind_plan(kind, tp, b, false, false);
      applied.insert(applied.end(), megatron.applied.begin(), megatron.applied.end());
      return KindPlan{std::move(megatron.graph), b, megatron.name, std::move(applied)};
    }
    ExpertStrategy megatron = megatron_tensor_parallel(serial, tp, by_width);
    KindPlan kp{std::move(megatron.graph), b, megatron.name, std::move(megatron.applied)};
    if (!options_.joint) return kp;
    const CostModel& costs = replica_costs(tp);
    HierarchicalOptions ho;
    ho.search.alpha = options_.alpha;
    ho.search.budget = options_.budget;
    ho.search.degrees = useful_degrees(costs.machine());
    ho.search.devices = tp;
    ho.search.vetoed = options_.vetoes;
    ho.search.cancel = options_.cancel;
    ho.search.deadline = options_.deadline;
    ho.split = false;
    ho.seed_degrees = ho.search.degrees;
    // Megatron-LM's plan seeds the search where the search's rules can make it.
    if (std::all_of(kp.applied.begin(), kp.applied.end(),
                    [&](const AppliedSubstitution& a) { return rule_allowed(a); }))
      ho.whole_graph_starts.push_back(kp.plan);
    HierarchicalResult r = hierarchical_search(serial, rules(), costs, ho);
    candidates_ += r.candidates_evaluated;
    if (r.best.size() == 0) {
      if (ho.whole_graph_starts.empty()) kp = KindPlan{serial, b, "serial", {}};
      return kp;
    }
    kp.plan = std::move(r.best);
    kp.applied = std::move(r.applied);
    kp.description = kp.applied.empty()
                         ? std::string("serial")
                         : fmt::format("joint search, {} substitutions", kp.applied.size());
    return kp;
  }

  // make_kind_plan's plan handing its activation on whole, as a stage does (segment_outputs.h).
  KindPlan whole_kind_plan(int kind, int tp, std::int64_t b, bool megatron_only, bool by_width) {
    KindPlan kp = make_kind_plan(kind, tp, b, megatron_only, by_width);
    hand_on_whole(kp.plan, model_);
    return kp;
  }

  const KindPlan& kind_plan(int kind, int tp, std::int64_t b, bool megatron_only, bool by_width) {
    if (kind_experts(kind).operators == 0) by_width = false;  // nothing to split by width
    const auto key = std::make_tuple(kind, tp, b, megatron_only, by_width);
    if (auto it = exact_.find(key); it != exact_.end()) return it->second;
    // Planned once per kind and replica size, at the first micro-batch size asked for; other
    // sizes take the same plan with the batch changed, where its degrees divide them.
    const auto base_key = std::make_tuple(kind, tp, megatron_only, by_width);
    auto base = base_.find(base_key);
    if (base == base_.end())
      base = base_.emplace(base_key, whole_kind_plan(kind, tp, b, megatron_only, by_width)).first;
    KindPlan kp;
    try {
      kp = base->second;
      if (kp.batch != b) kp.plan = rebatch(kp.plan, kp.batch, b);
      kp.batch = b;
    } catch (const ShapeError&) {
      // Another size's plan, where the base's degrees do not divide `b` or its one sample does
      // not say where the samples go in a Reshape (a sequence-first RNN's): one search per kind
      // and replica size, not one per micro-batch size.
      bool rebatched = false;
      for (const auto& [k, other] : exact_) {
        if (std::get<0>(k) != kind || std::get<1>(k) != tp || std::get<3>(k) != megatron_only ||
            std::get<4>(k) != by_width || other.batch <= 1 || other.batch == base->second.batch)
          continue;
        try {
          kp = other;
          kp.plan = rebatch(other.plan, other.batch, b);
          kp.batch = b;
          rebatched = true;
          break;
        } catch (const ShapeError&) {
        }
      }
      if (!rebatched) kp = whole_kind_plan(kind, tp, b, megatron_only, by_width);
    }
    kp.expert_parameters = kp.expert_fp8_parameters = 0;
    for (const auto& [id, node] : kp.plan.nodes())
      if (node.op.type == OpType::Experts)
        for (std::size_t slot = 2; slot < node.inputs.size(); ++slot) {
          const double e = static_cast<double>(kp.plan.shape(node.inputs[slot]).piece_elements());
          kp.expert_parameters += e;
          if (runs_fp8_gemms(node, machine_.device(0))) kp.expert_fp8_parameters += e;
        }
    return exact_.emplace(key, std::move(kp)).first->second;
  }

  // What a segment kind costs one context-parallel rank (cp 1: the whole micro-batch), its
  // experts spread over ep devices (1: the replica's own split), each split over etp (1 or tp).
  const SegmentProfile& profile(int kind, int tp, std::int64_t b, bool megatron_only, int cp,
                                int ep, int etp) {
    if (kind_experts(kind).operators == 0)
      ep = etp = 1;  // the same segment whatever the experts' split
    const auto key = std::make_tuple(kind, tp, b, megatron_only, cp, ep, etp);
    if (auto it = profiles_.find(key); it != profiles_.end()) return it->second;
    SegmentProfile p;  // infeasible unless the segment can be planned at this micro-batch size
    try {
      const Graph& plan = kind_plan(kind, tp, b, megatron_only, etp > 1).plan;
      Graph shard = context_shard(plan, sequence_, cp);
      // Each device's Experts task at its expert-parallel shape and load (expert_load.h).
      cost_experts_as_planned(shard, ep, options_.request.expert_load);
      p = profile_segment(shard, replica_costs(tp));
    } catch (const ShapeError& e) {
      // A micro-batch size the model's shapes do not take (a Reshape holding the batch).
      if (options_.refused_batch && options_.refused_batch->empty())
        *options_.refused_batch = fmt::format("micro-batches of {}: {}", b, e.what());
    }
    return profiles_.emplace(key, p).first->second;
  }

  // Forward dense FLOPs of a kind at `b` samples, and of those its attention's products and its
  // experts'.
  struct KindFlops {
    double dense = 0, core = 0, experts = 0;
  };
  const KindFlops& kind_flops(int kind, std::int64_t b) {
    const auto key = std::make_pair(kind, b);
    if (auto it = flops_.find(key); it != flops_.end()) return it->second;
    Graph serial;
    try {
      serial = segment_graph(model_, chain_.segments[chain_.representative[kind]], b);
    } catch (const ShapeError&) {
      return flops_.emplace(key, KindFlops{}).first->second;  // profile: infeasible
    }
    KindFlops f;
    f.dense = dense_forward_flops(serial, options_.flop_count);
    for (const auto& [id, n] : serial.nodes()) {
      // What selective recomputation runs again; a fused kernel's backward recomputes anyway.
      if (is_attention(n.op.type) && !runs_fused_attention(n, machine_.device(0)))
        f.core += attention_task(serial, n).core_flops();  // the scores and the context
      if (n.op.type == OpType::Experts) f.experts += task_work(serial, id).flops;
    }
    return flops_.emplace(key, f).first->second;
  }

  // Contiguous chunks of segments: Megatron-LM's layer counts, or balanced by time.
  std::vector<std::pair<int, int>> chunks(const std::vector<double>& t, int count) const {
    if (!options_.joint || options_.request.launchable)
      return pipeline_layouts::layer_count_chunks(split_layer_of_, split_layers_, count);
    return pipeline_layouts::balanced_chunks(t, count);
  }

  // Sending one activation of `bytes` from pipeline rank a to rank b: each of the replica's devices
  // sends 1/tp of it to its peer and the receivers all-gather it (Megatron-LM's scatter/gather);
  // with sequence parallelism the activation is split along the sequence already and stays so.
  double p2p_time(const Layout& l, int a, int b, double bytes) const {
    std::vector<Transfer> moves;
    std::vector<int> replica;
    for (int j = 0; j < l.tp; ++j) {
      moves.push_back({l.grid().device(a, 0, j), l.grid().device(b, 0, j), bytes / l.tp});
      replica.push_back(l.grid().device(b, 0, j));
    }
    const double gather = l.sp ? 0.0 : costs_.allreduce_time(replica, bytes) / 2;
    return costs_.transfers_time(moves) + gather;
  }

  // What one segment of a kind costs a micro-batch under a layout's segment options, whatever its
  // pipeline, recomputation and ZeRO stage: the same for every segment of the kind.
  struct KindCost {
    const SegmentProfile* profile = nullptr;
    double forward = 0, backward = 0;  // seconds, its exposed collectives and all-to-alls in them
    double comm = 0;                   // seconds of collectives
    double sp_share = 0;  // activation bytes sequence parallelism splits off the whole ones
    // Expert parallelism: each MoE layer's tokens go to the devices of their experts and back by
    // all-to-all (dispatch and combine forward, their gradients backward), each device sending
    // its 1/(tp x cp) of the micro-batch's tokens times top-k.
    double alltoall = 0;             // seconds, exposed unless overlapped with another micro-batch
    double alltoall_bytes = 0;       // every replica's devices
    double alltoall_inter_node = 0;  // of those, across nodes
    // Expert tensor parallelism behind the all-to-all: its slices' exchange of the routed copies
    // beyond what the replica's plan costs (seconds, forward and backward).
    double expert_slices = 0;
    // Context parallelism: its attentions' keys and values exchanged among the sequence shards
    // (context_exchange.h).
    bool has_exchange = false;
    double exchange = 0, exchange_forward = 0, exchange_bytes = 0, exchange_workspace = 0;
    // Weight elements a device holds: the dense ones, its share of the experts, and of those
    // all, the ones fp8 GEMMs read.
    double dense_parameters = 0, expert_parameters = 0, fp8_parameters = 0;
    // The experts' weights a device holds in fp8 (its share, or the replica plan's pieces), and
    // without expert parallelism the expert pieces among its dense weights: what the memory bars
    // draw as experts.
    double expert_fp8_parameters = 0, replica_expert_parameters = 0;
  };

  const KindCost& kind_cost(const Layout& l, int kind) {
    const auto key = std::make_tuple(kind, l.tp, l.cp, l.pp, l.dp, static_cast<int>(l.order), l.b,
                                     l.megatron_segments, l.ep, l.etp, l.sp, l.tp_overlap,
                                     static_cast<int>(l.dispatcher), l.ep_overlap,
                                     static_cast<int>(l.cp_exchange));
    if (auto it = kind_costs_.find(key); it != kind_costs_.end()) return it->second;
    KindCost c;
    const SegmentProfile& s = profile(kind, l.tp, l.b, l.megatron_segments, l.cp, l.ep, l.etp);
    c.profile = &s;
    if (!s.feasible) return kind_costs_.emplace(key, c).first->second;
    // Sequence parallelism splits what tensor parallelism leaves whole (norms, residual sums)
    // along the sequence: 1/tp of its activations and of its work on each device.
    const double sp_left = l.sp ? 1.0 - 1.0 / l.tp : 0.0;
    c.sp_share = s.whole_activations * sp_left;
    c.forward = s.forward - s.whole_forward * sp_left;
    c.backward = s.backward - s.whole_backward * sp_left;
    c.comm = s.communication;
    c.dense_parameters = s.parameters;
    c.fp8_parameters = s.fp8_parameters;
    if (const KindExperts& ex = kind_experts(kind); l.ep > 1 && ex.operators > 0) {
      const double element = static_cast<double>(size_of(dtype_));
      // The busiest device receives its experts' load of tokens (expert_load.h), which the
      // exchange waits for; dropless, the others receive less, and all of them send as many.
      const ExpertLoad& load = options_.request.expert_load;
      const double message = static_cast<double>(l.b) * ex.tokens_per_sample / (l.tp * l.cp) *
                             ex.hidden * element * load.factor(true);
      const DispatchCost& d = dispatch(l, message);
      const double sent = load.dropless() ? 1 / load.factor(true) : 1.0;
      c.alltoall = 4.0 * ex.operators * d.seconds;
      // Overlapped, they are placed once the chunks are known (the warm-up's stay exposed).
      if (!l.ep_overlap) {
        c.forward += c.alltoall / 2;
        c.backward += c.alltoall / 2;
      }
      // Every expert group of the stage's tp x dp devices: dp x tp / ep of them a replica's.
      c.alltoall_bytes = 4.0 * ex.operators * d.bytes * sent * l.tp * l.cp / l.ep;
      c.alltoall_inter_node = 4.0 * ex.operators * d.inter_node_bytes * sent * l.tp * l.cp / l.ep;
      // The experts leave the replica's plan: 1/ep of them on each device, 1/etp of each (their
      // fp8 copies with them).
      const KindPlan& kp = kind_plan(kind, l.tp, l.b, l.megatron_segments, l.etp > 1);
      c.expert_parameters = ex.parameters / (l.ep * l.etp);
      c.dense_parameters -= kp.expert_parameters;
      if (kp.expert_fp8_parameters > 0) {
        c.expert_fp8_parameters =
            c.expert_parameters * kp.expert_fp8_parameters / kp.expert_parameters;
        c.fp8_parameters += c.expert_fp8_parameters - kp.expert_fp8_parameters;
      }
    } else if (ex.operators > 0) {
      const KindPlan& kp = kind_plan(kind, l.tp, l.b, l.megatron_segments, l.etp > 1);
      c.replica_expert_parameters = kp.expert_parameters;
      c.expert_fp8_parameters = kp.expert_fp8_parameters;
    }
    if (l.tp_overlap) {
      // Each pass's collectives (half the segment's) pipelined with its compute.
      const double half = s.communication / 2;
      const int sms = machine_.device(0).sm_count;
      const double f =
          overlapped_pass(c.forward - half, half, kTpOverlapSplits, kTpOverlapSms, sms);
      const double b =
          overlapped_pass(c.backward - half, half, kTpOverlapSplits, kTpOverlapSms, sms);
      c.comm = (f - (c.forward - half)) + (b - (c.backward - half));
      c.forward = f;
      c.backward = b;
    }
    if (const KindExperts& ex = kind_experts(kind); l.ep > 1 && l.etp > 1 && ex.operators > 0) {
      // Expert tensor parallelism behind an all-to-all (Megatron-Core's dispatcher with ETP > 1):
      // the slices of an expert gather the routed copies their devices received, top_k a token,
      // and reduce-scatter the partial outputs back, where the replica's plan (as a dense MLP's
      // split) reduces one copy a token; the difference is added, not overlapped with the GEMMs.
      const double element = static_cast<double>(size_of(dtype_));
      const double tokens = static_cast<double>(l.b) * ex.tokens_per_sample / l.cp;
      const double dense = tokens * ex.hidden * element;
      const double routed =
          dense * static_cast<double>(top_k_) * options_.request.expert_load.factor(true);
      std::vector<int> slices;
      for (int j = 0; j < l.tp; ++j) slices.push_back(l.grid().device(0, 0, j));
      const double extra = std::max(
          0.0, costs_.allreduce_time(slices, routed) - costs_.allreduce_time(slices, dense));
      const double pass = ex.operators * extra;  // a pass: forward, or its gradients backward
      c.expert_slices = 2 * pass;
      c.forward += pass;
      c.backward += pass;
      c.comm += 2 * pass;
    }
    if (l.cp > 1 && !s.attentions.empty()) {
      const ContextExchangeCost& sum = exchange(l, s);
      c.has_exchange = true;
      c.forward += sum.forward;
      c.backward += sum.backward;
      c.comm += sum.forward + sum.backward;
      c.exchange = sum.forward + sum.backward;
      c.exchange_forward = sum.forward;
      c.exchange_bytes = sum.bytes;
      c.exchange_workspace = sum.workspace;
    }
    return kind_costs_.emplace(key, c).first->second;
  }

  // Bytes a gradient element is kept and reduced in: bf16 with --grad-reduce-in-bf16, else as
  // the frameworks keep the dtype's (gradient_bytes).
  double gradient_element() const {
    return options_.request.grad_reduce_in_bf16 ? 2.0 : gradient_bytes(dtype_);
  }
  // Bytes an fp8 GEMM's weight holds beyond the dtype's: its fp8 and transposed fp8 copies (2),
  // or none where --fp8-param-gather holds those two in place of the bf16 weight.
  double fp8_copy() const { return options_.request.fp8_param_gather ? 0.0 : 2.0; }

  // An all-to-all of `message` bytes a device among the layout's first expert group: the same for
  // every layout of that grid, dispatcher and degree.
  const DispatchCost& dispatch(const Layout& l, double message) {
    const auto key = std::make_tuple(static_cast<int>(l.dispatcher), message, l.tp, l.cp, l.pp,
                                     l.dp, static_cast<int>(l.order), l.ep, l.etp);
    if (auto it = dispatches_.find(key); it != dispatches_.end()) return it->second;
    return dispatches_
        .emplace(key,
                 dispatch_cost(l.dispatcher, {experts_, top_k_, route_groups_, route_group_top_k_},
                               l.grid().expert_group(0, l.ep, l.etp), message, costs_))
        .first->second;
  }

  // The key/value exchange of a segment profile's attentions among the layout's sequence shards.
  const ContextExchangeCost& exchange(const Layout& l, const SegmentProfile& s) {
    const auto key = std::make_tuple(&s, static_cast<int>(l.cp_exchange), l.tp, l.cp, l.pp, l.dp,
                                     static_cast<int>(l.order));
    if (auto it = exchanges_.find(key); it != exchanges_.end()) return it->second;
    ContextExchangeCost sum;
    for (const auto& a : s.attentions) {
      const ContextExchangeCost x =
          context_exchange_cost(l.cp_exchange, l.grid().context_groups(0), a.kv_bytes,
                                a.products_forward, a.products_backward, costs_);
      sum.forward += x.forward;
      sum.backward += x.backward;
      sum.bytes += x.bytes;
      sum.workspace = std::max(sum.workspace, x.workspace);
    }
    return exchanges_.emplace(key, sum).first->second;
  }

  // A segment's recomputation under the layout (repeated blocks only): the forward work its
  // backward pass runs again, and the activation bytes it keeps for the backward.
  std::pair<double, double> recomputation(const KindCost& c, bool block, const Layout& l) const {
    const SegmentProfile& s = *c.profile;
    if (block && l.recompute == Recompute::Full)
      return {c.forward, s.input_bytes / (l.sp ? l.tp : 1)};
    if (block && l.recompute == Recompute::Selective) {
      const Recomputed r = selective_recomputation(s, l.modules);
      return {r.seconds, s.activations - r.bytes - c.sp_share};
    }
    return {0.0, s.activations - c.sp_share};
  }

  // Whether the layout runs a block's mixture-of-experts layers forward again in the backward
  // pass, their all-to-alls included (full recomputation, or the moe module).
  bool recomputes_moe(const Layout& l, bool block) const {
    return block && (l.recompute == Recompute::Full || (l.recompute == Recompute::Selective &&
                                                        l.modules.has(RecomputeModules::kMoe)));
  }

  // A lower bound on the key (key()) of the layout's plan, from its segments' costs alone:
  // - time: the 1F1B schedule's (m - 1 + (v - 1) / v) x busiest + sum / v (pipeline_time) with the
  //   busiest rank at least the average and at least the longest segment, every send, gradient
  //   synchronisation and optimizer step left out;
  // - memory: the fullest device at least the average of the ranks, each holding its weights'
  //   share (tied tables all counted once) and the fewest micro-batches in flight any rank holds.
  double bound(const Layout& l, const std::vector<const KindCost*>& costs) const {
    double total = 0, longest = 0, kept = 0, dense = 0, held = 0, fp8 = 0, workspace = 0;
    for (int k = 0; k < chain_.kinds(); ++k) {
      const KindCost& c = *costs[static_cast<std::size_t>(k)];
      if (!c.profile->feasible) return kInfinity;
      for (const bool block : {false, true}) {
        const int count = segments_of_[static_cast<std::size_t>(k)][block ? 1 : 0];
        if (count == 0) continue;
        const auto [extra, keep] = recomputation(c, block, l);
        const double t = c.forward + c.backward + extra;
        total += count * t;
        longest = std::max(longest, t);
        kept += count * std::max(0.0, keep);
        dense += count * c.dense_parameters;
        held += count * c.expert_parameters;
        fp8 += count * c.fp8_parameters;
      }
      if (c.has_exchange) workspace = std::max(workspace, c.exchange_workspace);
    }
    const double v = l.v;
    const double time = (l.m - 1 + (v - 1) / v) * std::max(total / l.pp, longest) + total / v;
    const int edp = l.expert_data_parallel();
    const double per_dense =
        parameter_memory(1.0, dtype_, options_.optimizer, l.zero, l.copies(), gradient_element())
            .total();
    const double per_expert =
        parameter_memory(1.0, dtype_, options_.optimizer, l.zero, edp, gradient_element()).total();
    const double memory =
        (per_dense * std::max(0.0, dense - tied_.elements() / l.tp) + per_expert * held +
         fp8_copy() * fp8 + in_flight_micro_batches(l.pp - 1, l.pp, l.m, l.v) * kept) /
            l.pp +
        workspace;
    // Rounding: the plan sums the same terms in another order.
    constexpr double kSlack = 1 - 1e-9;
    return memory * kSlack > memory_ ? 1e9 + memory * kSlack : time * kSlack;
  }
  double bound(const Layout& l) { return bound(l, kind_costs(l)); }

  std::vector<const KindCost*> kind_costs(const Layout& l) {
    std::vector<const KindCost*> out;
    for (int k = 0; k < chain_.kinds(); ++k) out.push_back(&kind_cost(l, k));
    return out;
  }

  // Each grid's lower bound: its layouts' least. Grids not reached before the deadline or a
  // cancel keep none (infinity) and come last.
  std::vector<double> grid_bounds(const LayoutSpace& space) {
    std::vector<double> out(space.grids().size(), kInfinity);
    for (std::size_t gi = 0; gi < out.size(); ++gi) {
      if ((options_.cancel && options_.cancel->load()) ||
          (options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline))
        break;
      const LayoutGrid& g = space.grids()[gi];
      const auto& stage = space.stages()[static_cast<std::size_t>(g.stage)];
      // The layouts of a grid run through its segment options fastest: each option's costs
      // serve every recomputation and ZeRO stage.
      double least = kInfinity;
      for (std::size_t o = 0; o < stage.segments.size(); ++o) {
        Layout l = space.layout(g, static_cast<std::int64_t>(o));
        const std::vector<const KindCost*> costs = kind_costs(l);
        for (const pipeline_layouts::RecomputeOption& rc : stage.recomputes)
          for (int z : stage.zeros) {
            l.set_recompute(rc);
            l.zero = z;
            least = std::min(least, bound(l, costs));
          }
      }
      out[gi] = least;
    }
    return out;
  }

  PipelinePlan evaluate(const Layout& l) {
    PipelinePlan p;
    p.tensor_parallel = l.tp;
    p.pipeline_stages = l.pp;
    p.data_parallel = l.dp;
    p.micro_batches = l.m;
    p.micro_batch_size = l.b;
    p.interleave = l.v;
    p.recompute = l.recompute;
    if (l.recompute == Recompute::Selective) p.recompute_modules = l.modules;
    p.zero_stage = l.zero;
    p.sequence_parallel = l.sp;
    p.overlap_grad_reduce = l.overlap;
    p.tp_comm_overlap = l.tp_overlap;
    p.device_order = l.order;
    p.dtype = dtype_;
    p.expert_parallel = l.ep;
    p.expert_tensor_parallel = l.etp;
    p.expert_data_parallel = l.expert_data_parallel();
    p.context_parallel = l.cp;
    p.context_exchange = l.cp_exchange;
    p.token_dispatcher = l.dispatcher;
    p.ep_comm_overlap = l.ep_overlap;
    // Megatron-LM's dealing of whole layers, which the joint search's time-balanced chunks
    // (cut anywhere between segments) leave aside.
    const bool dealt = !options_.joint || options_.request.launchable;
    p.embedding_in_split = dealt && options_.request.embedding_in_split;
    p.loss_in_split = dealt && options_.request.loss_in_split;
    const int n = static_cast<int>(chain_.segments.size());
    std::vector<double> alltoall(n, 0.0);  // per segment and micro-batch
    double alltoall_bytes = 0;             // per micro-batch, every replica's devices
    double alltoall_inter_node = 0;        // of those, across nodes
    std::vector<double> time(n), saved(n), work(n, 0.0), forward(n), backward(n), comm(n);
    double bytes = 0;  // per micro-batch, inside the replicas
    std::vector<double> exchange(n, 0.0), exchange_forward(n, 0.0);
    double exchange_bytes = 0, exchange_workspace = 0;  // per micro-batch, a copy's devices
    double recompute_flops = 0, flops = 0;
    std::vector<const SegmentProfile*> prof(n);
    std::vector<const KindCost*> kind_costs(static_cast<std::size_t>(chain_.kinds()));
    for (int k = 0; k < chain_.kinds(); ++k) {
      kind_costs[static_cast<std::size_t>(k)] = &kind_cost(l, k);
      if (!kind_costs[static_cast<std::size_t>(k)]->profile->feasible) {
        p.iteration_time = kInfinity;
        p.peak_memory = kInfinity;
        return p;
      }
    }
    for (int j = 0; j < n; ++j) {
      const int kind = chain_.segments[j].kind;
      const KindCost& kc = *kind_costs[static_cast<std::size_t>(kind)];
      const SegmentProfile& s = *kc.profile;
      prof[j] = &s;
      const KindFlops& kf = kind_flops(kind, l.b);
      const double dense = kf.dense;
      flops += 3 * dense;
      forward[j] = kc.forward;
      backward[j] = kc.backward;
      comm[j] = kc.comm;
      alltoall[j] = kc.alltoall;
      alltoall_bytes += kc.alltoall_bytes;
      alltoall_inter_node += kc.alltoall_inter_node;
      if (kc.has_exchange) {
        exchange[j] = kc.exchange;
        exchange_forward[j] = kc.exchange_forward;
        exchange_bytes += kc.exchange_bytes;
        exchange_workspace = std::max(exchange_workspace, kc.exchange_workspace);
      }
      const auto [extra, keep] = recomputation(kc, block_[j], l);
      if (block_[j] && l.recompute == Recompute::Full) recompute_flops += dense;
      if (block_[j] && l.recompute == Recompute::Selective) {
        const RecomputeModules& m = l.modules;
        if (m.has(RecomputeModules::kCoreAttention)) recompute_flops += kf.core;
        if (m.has(RecomputeModules::kMoe)) recompute_flops += kf.experts;
      }
      time[j] = forward[j] + backward[j] + extra;
      work[j] = extra;
      saved[j] = std::max(0.0, keep);
      bytes += s.bytes * l.cp;  // every sequence shard's replica
    }
    bytes += alltoall_bytes + exchange_bytes;
    const auto parts = chunks(time, l.pp * l.v);
    std::vector<double> rank_time(l.pp, 0.0), rank_params(l.pp, 0.0), rank_saved(l.pp, 0.0),
        rank_comm(l.pp, 0.0), rank_workspace(l.pp, 0.0), rank_segment_params(l.pp, 0.0),
        rank_forward(l.pp, 0.0), rank_backward(l.pp, 0.0), rank_fp8_params(l.pp, 0.0),
        rank_expert_params(l.pp, 0.0), rank_alltoall(l.pp, 0.0), rank_exchange(l.pp, 0.0),
        rank_replica_experts(l.pp, 0.0), rank_expert_fp8(l.pp, 0.0), rank_slices(l.pp, 0.0);
    // Each rank's weights in the order its first chunk runs them: their last gradient bucket.
    std::vector<std::vector<double>> rank_first_weights(l.pp);
    double p2p_bytes = 0, fill_p2p = 0;
    // Asked of CPU ranks, an overlap hides nothing (DeviceSpec::overlaps_communication).
    const bool overlaps = l.overlap && machine_.device(0).overlaps_communication();
    const bool overlap_p2p = sends_overlap_compute(l.v, overlaps);
    for (int c = 0; c < static_cast<int>(parts.size()); ++c) {
      const auto [first, last] = parts[c];
      const int rank = c % l.pp;
      StagePlan sp;
      sp.rank = rank;
      sp.first_segment = first;
      sp.last_segment = last;
      sp.first_layer = layer_of_[first];
      sp.last_layer = layer_of_[last];
      sp.first_node = first_name(first);
      sp.last_node = model_.node(chain_.segments[last].nodes.back()).op.name;
      double chunk_experts = 0;  // expert weight elements a device holds of the chunk's
      for (int j = first; j <= last; ++j) {
        const SegmentProfile& s = *prof[j];
        // Under expert parallelism the experts leave the replica's plan: 1/ep of them on each
        // device, synchronised over the devices holding the same ones (kind_cost()).
        const KindCost& kc = *kind_costs[static_cast<std::size_t>(chain_.segments[j].kind)];
        sp.forward += forward[j];
        sp.backward += backward[j] + work[j];
        sp.parameters += kc.dense_parameters + kc.expert_parameters;
        // A recomputed forward pass sends its all-to-alls and key/value exchanges again.
        const bool moe_again = recomputes_moe(l, block_[j]);
        const bool attention_again = l.recompute == Recompute::Full && block_[j];
        rank_alltoall[rank] += alltoall[j] * (moe_again ? 1.5 : 1.0);
        rank_slices[rank] += kc.expert_slices * (moe_again ? 1.5 : 1.0);
        rank_exchange[rank] += exchange[j] * (attention_again ? 1.5 : 1.0);
        add_segment_exchanges(sp.exchanges, alltoall[j], l.ep_overlap, exchange_forward[j],
                              exchange[j], moe_again, attention_again);
        if (l.ep_overlap && alltoall[j] > 0) {
          // Behind the partner micro-batch's dense compute (pipeline_cost.h).
          const double exposed = exposed_expert_alltoall(
              alltoall[j], std::max(0.0, forward[j] + backward[j] - prof[j]->experts_time),
              in_flight_micro_batches(rank, l.pp, l.m, l.v) / l.m, kExpertCommSms,
              machine_.device(0).sm_count);
          sp.forward += exposed / 2;
          sp.backward += exposed / 2;
          sp.exchanges.alltoall_exposed.forward += exposed / 2;
          sp.exchanges.alltoall_exposed.backward += exposed / 2;
        }
        if (c < l.pp)
          rank_first_weights[rank].insert(rank_first_weights[rank].end(), s.dense_weights.begin(),
                                          s.dense_weights.end());
        rank_expert_params[rank] += kc.expert_parameters;
        chunk_experts += kc.expert_parameters;
        rank_expert_fp8[rank] += kc.expert_fp8_parameters;
        rank_replica_experts[rank] += kc.replica_expert_parameters;
        rank_fp8_params[rank] += kc.fp8_parameters;
        rank_saved[rank] += saved[j];
        rank_comm[rank] +=
            comm[j] + (l.recompute == Recompute::Full && block_[j] ? comm[j] / 2 : 0.0);
        rank_segment_params[rank] = std::max(rank_segment_params[rank], s.parameters);
        if (l.recompute == Recompute::Full && block_[j])
          rank_workspace[rank] = std::max(rank_workspace[rank], s.activations);
      }
      // Forward activation and backward gradient across each boundary the chunk has.
      for (int boundary : {first, last + 1}) {
        if (boundary == 0 || boundary == n) continue;
        const double act = prof[boundary]->input_bytes;
        const int other = boundary == first ? (c + l.pp * l.v - 1) % l.pp : (c + 1) % l.pp;
        if (other == rank) continue;
        const double hop = p2p_time(l, rank, other, act);
        sp.p2p += 2 * hop;
        if (boundary == last + 1) {
          p2p_bytes += 2 * act * l.cp;  // each sequence shard's
          // The warm-up's first forward and the cool-down's last backward cross every boundary
          // of the first pass in turn, with nothing to hide behind.
          if (c < l.pp - 1) fill_p2p += 2 * hop;
        }
      }
      const double exposed_p2p = exposed_sends(sp.p2p, sp.forward + sp.backward, overlap_p2p);
      rank_time[rank] += sp.forward + sp.backward + exposed_p2p;
      rank_forward[rank] += sp.forward;
      rank_backward[rank] += sp.backward;
      rank_comm[rank] += exposed_p2p;
      rank_params[rank] += sp.parameters - chunk_experts;  // the dense weights
      p.chunks.push_back(std::move(sp));
    }
    const double tied_sync = tied_.tie(
        parts, l.pp, l.tp, gradient_element(), rank_params, [&](int a, int b, double message) {
          return costs_.allreduce_time({l.grid().device(a, 0, 0), l.grid().device(b, 0, 0)},
                                       message);
        });
    const PipelineTime pt = pipeline_time(rank_time, l.m, l.v);
    // Overlapped, the sends leave the ranks' times; the warm-up's and cool-down's stay.
    const double fill = overlap_p2p ? fill_p2p : 0.0;
    p.pipeline_time = pt.time + fill;
    p.bubble_time = pt.bubble + fill;
    const double ideal = pt.time - pt.bubble;
    p.bubble_fraction = ideal > 0 ? p.bubble_time / ideal : 0.0;
    // Once an iteration: the data-parallel gradient synchronisation of every rank's weights, then
    // the optimizer step on each device's share.
    const double size = static_cast<double>(size_of(dtype_));
    const auto& dev = machine_.device(0);
    double sync_bytes = 0;
    for (int r = 0; r < l.pp; ++r) {
      // ZeRO's gather moves the weights as held: fp8 ones in fp8 with --fp8-param-gather.
      const double fp8_share = options_.request.fp8_param_gather && rank_params[r] > 0
                                   ? std::clamp(rank_fp8_params[r] / rank_params[r], 0.0, 1.0)
                                   : 0.0;
      const double gathered = size * (1 - fp8_share) + fp8_share;
      // Rank r's weights of `parameters` elements synchronised over the devices of `group`.
      auto sync_over = [&](double parameters, const std::vector<int>& group,
                           std::vector<double> first_chunk_weights) {
        return data_parallel_sync(
            {.parameters = parameters,
             .gradient_bytes = gradient_element(),
             .weight_bytes = gathered,
             .zero = l.zero,
             .micro_batches = l.m,
             .overlap = overlaps,
             .forward = rank_forward[r],
             .backward = rank_backward[r],
             .data_parallel = static_cast<int>(group.size()),
             .first_chunk_weights = std::move(first_chunk_weights),
             .sms = dev.sm_count,
             .comm_sms = kNcclSms},
            [&](double buffer) { return costs_.allreduce_time(group, buffer); });
      };
      const DataSync sync = sync_over(rank_params[r], l.grid().data_parallel_group(r),
                                      std::move(rank_first_weights[r]));
      // The experts' weights, each held by the expert-data-parallel devices of its shard, are
      // synchronised among those (one group per device of an expert group).
      const int edp = p.expert_data_parallel;
      const DataSync expert_sync =
          rank_expert_params[r] > 0
              ? sync_over(rank_expert_params[r], l.grid().expert_data_group(r, l.ep * l.etp), {})
              : DataSync{};
      p.sync_time = std::max(p.sync_time, sync.exposed + expert_sync.exposed);
      p.rank_sync_total.push_back(sync.total + expert_sync.total);
      p.rank_sync_exposed.push_back(sync.exposed + expert_sync.exposed);
      p.rank_last_bucket.push_back(sync.last_bucket);
      sync_bytes += sync.bytes * l.tp + expert_sync.bytes * l.ep * l.etp;
      const double shard = (l.zero >= 1 ? rank_params[r] / l.copies() : rank_params[r]) +
                           (l.zero >= 1 ? rank_expert_params[r] / edp : rank_expert_params[r]);
      p.update_time = std::max(p.update_time, costs_.update_time(shard * 4.0, dev));
      MemoryBreakdown mem = parameter_memory(rank_params[r], dtype_, options_.optimizer, l.zero,
                                             l.copies(), gradient_element());
      if (rank_expert_params[r] > 0) {
        const MemoryBreakdown experts = parameter_memory(
            rank_expert_params[r], dtype_, options_.optimizer, l.zero, edp, gradient_element());
        mem.weights += experts.weights;
        mem.gradients += experts.gradients;
        mem.optimizer += experts.optimizer;
      }
      set_expert_share(mem,
                       rank_expert_params[r] > 0 ? rank_expert_params[r] : rank_replica_experts[r],
                       rank_expert_params[r] > 0 ? edp : l.copies(), rank_expert_fp8[r], dtype_,
                       options_.optimizer, l.zero, gradient_element(), fp8_copy());
      mem.activations = in_flight_micro_batches(r, l.pp, l.m, l.v) * rank_saved[r];
      // FP8 training keeps each fp8 GEMM's weight cast to fp8 and transposed beside the bf16
      // one (Transformer Engine's cached fp8 weights): 2 more bytes a parameter; or, with
      // --fp8-param-gather, the two fp8 copies in place of the bf16 one: none more.
      mem.weights += fp8_copy() * rank_fp8_params[r];
      mem.workspace = std::max(rank_workspace[r], exchange_workspace) +
                      (l.zero == 3 ? 2 * rank_segment_params[r] * size : 0.0);
      p.peak_memory = std::max(p.peak_memory, mem.total());
      p.rank_memory.push_back(mem);
    }
    p.fits = p.peak_memory <= memory_;
    p.sync_time += tied_sync;
    p.iteration_time = p.pipeline_time + p.sync_time + p.update_time;
    const int busiest =
        static_cast<int>(std::max_element(rank_time.begin(), rank_time.end()) - rank_time.begin());
    p.communication_time = l.m * rank_comm[busiest] + p.sync_time;
    p.compute_time = std::max(0.0, p.iteration_time - p.communication_time);
    p.communication_bytes = (bytes + p2p_bytes) * l.m * l.dp + sync_bytes;
    p.alltoall_time = l.m * *std::max_element(rank_alltoall.begin(), rank_alltoall.end());
    p.expert_slice_time = l.m * *std::max_element(rank_slices.begin(), rank_slices.end());
    p.alltoall_bytes = alltoall_bytes * l.m * l.dp;
    p.alltoall_inter_node_bytes = alltoall_inter_node * l.m * l.dp;
    p.experts = experts_;
    p.expert_load = options_.request.expert_load;
    p.grad_reduce_in_bf16 = options_.request.grad_reduce_in_bf16;
    p.fp8_param_gather = options_.request.fp8_param_gather;
    p.top_k = top_k_;
    p.route_groups = route_groups_;
    p.route_group_top_k = route_group_top_k_;
    p.cp_time = l.m * *std::max_element(rank_exchange.begin(), rank_exchange.end());
    p.cp_bytes = exchange_bytes * l.m * l.dp;
    // FLOPs over the whole batch: the micro-batch's times the micro-batches of every copy.
    const double scale = static_cast<double>(l.m) * l.dp;
    p.model_flops = (flops + recompute_flops) * scale;
    p.flop_count = options_.flop_count;
    p.tflops_per_device =
        p.iteration_time > 0 ? p.model_flops / p.iteration_time / machine_.num_devices() / 1e12 : 0;
    return p;
  }

  const Graph& model_;
  const MachineSpec& machine_;
  const PipelineOptions& options_;
  const SegmentChain chain_;
  const pipeline_layouts::PipelineTiedTables tied_;
  const CostModel costs_;
  const DataType dtype_;
  std::vector<int> layer_of_;  // per segment: the layer it belongs to
  std::vector<bool> block_;
  std::vector<int> split_layer_of_;  // per segment: its layer as Megatron-LM deals them (chunks())
  int split_layers_ = 0;
  std::vector<std::array<int, 2>> segments_of_;  // per kind: its segments, not blocks and blocks
  double memory_ = 0;
  bool transformer_ = false;
  bool sliding_window_ = false;    // an attention's window is shorter than its sequence
  bool latent_attention_ = false;  // an attention is multi-head latent attention
  std::string batch_statistics_;   // a BatchNorm (described): the batch stays whole
  std::map<int, std::unique_ptr<CostModel>> replica_costs_;
  std::map<std::tuple<int, int, bool, bool>, KindPlan> base_;
  std::map<std::tuple<int, int, std::int64_t, bool, bool>, KindPlan> exact_;
  std::map<std::tuple<int, int, std::int64_t, bool, int, int, int>, SegmentProfile> profiles_;
  std::map<std::pair<int, std::int64_t>, KindFlops> flops_;
  std::map<int, KindExperts> experts_of_;
  std::map<std::tuple<int, int, int, int, int, int, std::int64_t, bool, int, int, bool, bool, int,
                      bool, int>,
           KindCost>
      kind_costs_;
  std::map<std::tuple<int, double, int, int, int, int, int, int, int>, DispatchCost> dispatches_;
  std::map<std::tuple<const SegmentProfile*, int, int, int, int, int, int>, ContextExchangeCost>
      exchanges_;
  std::int64_t experts_ = 0;  // experts of the model's mixture-of-experts layers (0: none)
  std::int64_t top_k_ = 0;
  // The router's group limit (Experts' route_groups, route_group_top_k; 0: none).
  std::int64_t route_groups_ = 0, route_group_top_k_ = 0;
  std::int64_t sequence_ = 0;     // tokens of a sample's sequence (0: no attention)
  std::int64_t head_groups_ = 0;  // what divides every attention's heads and key/value groups
  std::int64_t evaluated_ = 0, candidates_ = 0;
};

}  // namespace

bool can_pipeline(const Graph& model) {
  // A serial model: one whose parallel operators are already placed is a plan, not a model.
  for (const auto& [id, n] : model.nodes())
    if (is_parallel_op(n.op.type)) return false;
  try {
    return segment_chain(model).segments.size() >= 2;
  } catch (const InputError&) {
    return false;  // a segment that is not a graph of its own
  }
}

std::optional<PipelinePlan> plan_pipeline(const Graph& model, const MachineSpec& machine,
                                          const PipelineOptions& options) {
  return Planner(model, machine, options).run();
}

}  // namespace unity
