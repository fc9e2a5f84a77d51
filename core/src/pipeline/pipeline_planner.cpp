#include "unity/core/pipeline/pipeline_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/tied_weights.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/search/candidate_cost.h"
#include "unity/core/search/hierarchical_search.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/strategies/expert_strategies.h"

namespace unity {
namespace {

// Where each of `count` chunks' layers end (exclusive), as Megatron-LM cuts `layers` layers: the
// same number in each, and where they do not divide, one layer fewer in the chunks at the ends,
// alternately first and last, inwards (Megatron-Core's --decoder-first/last-pipeline-num-layers;
// Llama 3 405B's 126 layers on 16 stages: 7, 8 x 14, 7). The first and last chunk also hold the
// embedding and the head, so they are the ones to lighten.
std::vector<int> chunk_layer_ends(int layers, int count) {
  const int per = (layers + count - 1) / count;
  std::vector<int> sizes(static_cast<std::size_t>(count), per);
  int fewer = per * count - layers;
  for (int i = 0; fewer > 0 && i < count; ++i, --fewer)
    sizes[static_cast<std::size_t>(i % 2 == 0 ? i / 2 : count - 1 - i / 2)] -= 1;
  std::vector<int> ends;
  int end = 0;
  for (int s : sizes) ends.push_back(end += s);
  return ends;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// One layout the planner costs.
struct Layout {
  int tp = 1, pp = 1, dp = 1, m = 1, v = 1;
  std::int64_t b = 1;
  Recompute recompute = Recompute::None;
  int zero = 0;
  bool sp = false;
  bool overlap = false;     // data-parallel reduce (and ZeRO-1's gather) behind compute
  bool tp_overlap = false;  // tensor-parallel collectives pipelined with the GEMMs
  DeviceOrder order = DeviceOrder::PipelineOutermost;
  // The joint search's segment plans, or Megatron-LM's (which the layout search also weighs: the
  // segment search ranks one mapping and leaves the weights' synchronisation out, which a plan
  // that keeps whole weights on each device pays once per iteration).
  bool megatron_segments = false;
  int ep = 1;  // expert parallelism: experts spread over ep devices of tp x dp (1: none)
  TokenDispatcher dispatcher = TokenDispatcher::AllToAll;
  bool ep_overlap = false;  // all-to-alls behind another micro-batch's compute
  int cp = 1;               // context parallelism: each sequence over cp devices (1: none)
  ContextExchange cp_exchange = ContextExchange::Ring;
  int copies() const { return dp * cp; }  // devices of a stage holding the same weights
};

// SMs DeepEP's kernels (and NCCL's all-to-all) hold while they run beside compute: DeepEP's
// Buffer default (num_sms = 20).
constexpr int kExpertCommSms = 20;

// Transformer Engine's pipelined reduce-scatter overlap (pipeline_cost.h, overlapped_pass).
constexpr int kTpOverlapSplits = 4;
constexpr int kTpOverlapSms = 16;
// SMs that NCCL's data-parallel collectives hold while they overlap compute: one thread block per
// channel, and as many channels as Transformer Engine gives its overlap (NCCL_MAX_NCHANNELS caps
// them on a real run).
constexpr int kNcclSms = 16;

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
    find_tied_weights();
    // Sequence parallelism splits token-wise operators along a sequence: a transformer's.
    transformer_ = has_attention(model);
    // Context parallelism splits the attentions' sequence (the first one's: a decoder's are one).
    for (const auto& [id, n] : model.nodes())
      if (is_attention(n.op.type) && sequence_ == 0)
        sequence_ = model.shape(n.inputs[0]).dims[1].size;
    for (const auto& [id, n] : model.nodes())
      if (n.op.type == OpType::Experts) {
        experts_ = model.shape(n.inputs[2]).dims[0].size;
        top_k_ = n.op.attrs.get_int("top_k");
      }
    memory_ = smallest_device_memory(machine);
  }

  std::optional<PipelinePlan> run() {
    const auto layouts = enumerate();
    std::optional<PipelinePlan> best;
    bool megatron_segments = false;
    for (const Layout& l : layouts) {
      if (options_.cancel && options_.cancel->load()) break;
      if (best && options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline)
        break;
      PipelinePlan p = evaluate(l);
      ++evaluated_;
      if (!best || key(p) < key(*best)) {
        best = std::move(p);
        megatron_segments = l.megatron_segments;
      }
    }
    if (!best || !std::isfinite(best->iteration_time)) return std::nullopt;
    best->layouts_evaluated = evaluated_;
    best->candidates_evaluated = candidates_;
    // What each kind's replica plan is, for the layout chosen.
    for (int k = 0; k < chain_.kinds(); ++k) {
      const KindPlan& kp =
          kind_plan(k, best->tensor_parallel, best->micro_batch_size, megatron_segments);
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

  // Every layout the request allows.
  std::vector<Layout> enumerate() const {
    const auto& r = options_.request;
    const int n = machine_.num_devices();
    const int per_node = machine_.devices_per_node;
    const std::int64_t batch = model_.batch_size;
    if (batch <= 0) throw InputError(fmt::format("'{}' has no batch size to plan", model_.name));
    std::vector<int> tps;
    if (r.tensor_parallel) {
      const int tp = r.tensor_parallel;
      if (tp > per_node || per_node % tp != 0 || n % tp != 0)
        throw InputError(fmt::format(
            "--tp {}: tensor parallelism stays inside a node, so it must divide the {} devices of "
            "a {} node (and the {} devices in use)",
            tp, per_node, machine_.name, n));
      tps = {tp};
    } else {
      for (int tp : divisors(std::min(per_node, n)))
        if (per_node % tp == 0 && n % tp == 0) tps.push_back(tp);
    }
    std::vector<Layout> out;
    for (int tp : tps)
      for (int cp : context_parallel_degrees(tp)) {
        if (cp == 1 || r.context_parallel) {
          add_grids(tp, cp, out);
          continue;
        }
        // A searched context-parallel degree that what was fixed does not fit is skipped.
        try {
          add_grids(tp, cp, out);
        } catch (const InputError&) {
        }
      }
    if (out.empty() && r.pipeline_stages && !r.tensor_parallel &&
        std::none_of(tps.begin(), tps.end(),
                     [&](int tp) { return (n / tp) % r.pipeline_stages == 0; }))
      throw InputError(fmt::format("--pp {}: {} devices do not split into {} stages",
                                   r.pipeline_stages, n, r.pipeline_stages));
    return out;
  }

  // The context-parallel degrees with `tp`: those the model's sequence splits into 2 x cp chunks
  // and the machine's devices into tp x cp replicas. Searched in joint mode (powers of two), 1 in
  // expert mode unless asked.
  std::vector<int> context_parallel_degrees(int tp) const {
    const auto& r = options_.request;
    const int n = machine_.num_devices();
    auto fits = [&](int cp) {
      return cp == 1 || (sequence_ > 0 && sequence_ % (2 * cp) == 0 && n % (tp * cp) == 0);
    };
    if (r.context_parallel) {
      const int cp = r.context_parallel;
      if (cp > 1 && sequence_ == 0)
        throw InputError(fmt::format("--cp {}: '{}' has no attention to split the sequence of", cp,
                                     model_.name));
      if (cp > 1 && sequence_ % (2 * cp) != 0)
        throw InputError(fmt::format(
            "--cp {}: the sequence of {} tokens does not split into 2 x {} chunks (context "
            "parallelism deals each rank two chunks, one from each end, to balance causal work)",
            cp, sequence_, cp));
      if (!fits(cp)) {
        if (!r.tensor_parallel) return {};
        throw InputError(
            fmt::format("--cp {}: {} devices do not split into replicas of --tp {} x "
                        "--cp {} devices",
                        cp, n, tp, cp));
      }
      return {cp};
    }
    std::vector<int> out{1};
    if (options_.joint && transformer_)
      for (int cp = 2; tp * cp <= n; cp *= 2)
        if (fits(cp)) out.push_back(cp);
    return out;
  }

  // The layouts of replicas of tp x cp devices.
  void add_grids(int tp, int cp, std::vector<Layout>& out) const {
    const auto& r = options_.request;
    const int n = machine_.num_devices();
    const int segments = static_cast<int>(chain_.segments.size());
    const std::int64_t batch = model_.batch_size;
    const int replicas = n / (tp * cp);
    {
      std::vector<int> pps;
      if (r.pipeline_stages) {
        const int pp = r.pipeline_stages;
        if (replicas % pp != 0) {
          // A searched replica size that leaves too few replicas is skipped; a fixed one fails.
          if (!r.tensor_parallel) return;
          throw InputError(fmt::format(
              "--pp {}: {} devices / (--tp {}{}) = {} stage replicas, which {} stages do not "
              "divide",
              pp, n, tp, cp > 1 ? fmt::format(" x --cp {}", cp) : std::string(), replicas, pp));
        }
        if (pp > segments)
          throw InputError(fmt::format("--pp {}: '{}' has only {} segments to make stages of", pp,
                                       model_.name, segments));
        pps = {pp};
      } else {
        for (int pp : divisors(replicas))
          if (pp <= segments) pps.push_back(pp);
      }
      for (int pp : pps) {
        const int dp = replicas / pp;
        if (batch % dp != 0) {
          if (r.pipeline_stages && r.tensor_parallel)
            throw InputError(fmt::format(
                "--batch {} does not divide over {} data-parallel copies ({} devices / (--tp {} "
                "x --pp {}{}))",
                batch, dp, n, tp, pp, cp > 1 ? fmt::format(" x --cp {}", cp) : std::string()));
          continue;
        }
        add_layouts(tp, cp, pp, dp, batch / dp, out);
      }
    }
  }

  void add_layouts(int tp, int cp, int pp, int dp, std::int64_t per_replica,
                   std::vector<Layout>& out) const {
    const auto& r = options_.request;
    const bool joint = options_.joint;
    const int segments = static_cast<int>(chain_.segments.size());
    std::vector<int> ms;
    if (r.micro_batches) {
      if (per_replica % r.micro_batches != 0)
        throw InputError(
            fmt::format("--micro-batches {}: the {} samples of each data-parallel copy "
                        "do not split into that many",
                        r.micro_batches, per_replica));
      ms = {r.micro_batches};
    } else {
      // Micro-batches of up to 64 samples (larger ones only add memory).
      for (std::int64_t b = 1; b <= std::min<std::int64_t>(per_replica, 64); ++b)
        if (per_replica % b == 0) ms.push_back(static_cast<int>(per_replica / b));
    }
    std::vector<Recompute> recomputes;
    if (r.recompute)
      recomputes = {*r.recompute};
    else if (joint)
      recomputes = {Recompute::None, Recompute::Selective, Recompute::Full};
    else
      recomputes = {Recompute::Full};  // Megatron-LM's published runs recompute every layer
    std::vector<int> zeros;
    if (r.zero_stage >= 0) {
      // Asked for, ZeRO 2 and 3 combine with pipelines too: every micro-batch then
      // reduce-scatters its gradients (and ZeRO 3 all-gathers the weights for every pass), which
      // the cost counts.
      zeros = {r.zero_stage};
    } else if (joint) {
      // With pipelines the search goes up to ZeRO 2, which Llama 3's FSDP ran with its pipeline
      // (each micro-batch's gradients reduced behind the next one's compute); ZeRO 3 would gather
      // the weights for every pass of every micro-batch.
      zeros = pp > 1 ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1, 2, 3};
    } else {
      zeros = {0};
    }
    // Overlapping the data-parallel communication with compute never costs time in this model,
    // so the joint search takes it; Megatron-LM's published layouts (SC'21) did not overlap.
    const bool overlap = r.overlap_grad_reduce ? *r.overlap_grad_reduce : joint;
    std::vector<bool> sps;
    if (r.sequence_parallel)
      sps = {*r.sequence_parallel && tp > 1};
    else
      sps = joint && tp > 1 && transformer_ ? std::vector<bool>{false, true}
                                            : std::vector<bool>{false};
    // Overlapping tensor-parallel collectives with GEMMs pipelines the sequence-parallel
    // all-gathers and reduce-scatters (Megatron-Core requires --sequence-parallel for it), on
    // devices whose SMs it can share.
    const bool can_overlap_tp = tp > 1 && machine_.device(0).sm_count > kTpOverlapSms;
    if (r.tp_comm_overlap && *r.tp_comm_overlap && tp > 1 &&
        !(r.sequence_parallel && *r.sequence_parallel))
      throw InputError(
          "--tp-comm-overlap needs --sequence-parallel (the overlap pipelines the "
          "sequence-parallel all-gathers and reduce-scatters with their GEMMs)");
    // The joint search's segment plans, and in joint mode Megatron-LM's beside them.
    const std::vector<bool> segment_plans =
        joint && tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false};
    const std::vector<int> eps = expert_parallel_degrees(tp, cp * dp);
    std::vector<ContextExchange> exchanges{ContextExchange::Ring};
    if (r.context_exchange)
      exchanges = {*r.context_exchange};
    else if (joint && cp > 1)
      exchanges.push_back(ContextExchange::AllGather);
    std::vector<TokenDispatcher> dispatchers{TokenDispatcher::AllToAll};
    if (r.dispatcher)
      dispatchers = {*r.dispatcher};
    else if (joint && experts_ > 0)
      dispatchers.push_back(TokenDispatcher::DeepEp);
    std::vector<bool> ep_overlaps{false};
    if (r.ep_comm_overlap)
      ep_overlaps = {*r.ep_comm_overlap};
    else if (joint && experts_ > 0)
      ep_overlaps.push_back(true);
    // The order of the devices matters where links differ above the node: on a machine of pods.
    std::vector<DeviceOrder> orders{DeviceOrder::PipelineOutermost};
    if (r.device_order)
      orders = {*r.device_order};
    else if (machine_.pod_of(machine_.num_devices() - 1) > 0 && pp > 1 && dp > 1)
      orders.push_back(DeviceOrder::DataParallelOutermost);
    for (int m : ms) {
      std::vector<int> vs;
      if (r.interleave) {
        vs = {r.interleave};
      } else {
        for (int v = 1; v <= 8; ++v) vs.push_back(v);
      }
      for (int v : vs) {
        if (v > 1 && (pp == 1 || m % pp != 0)) {
          if (r.interleave && r.pipeline_stages)
            throw InputError(
                fmt::format("--interleave {} needs --pp > 1 and a micro-batch count "
                            "that --pp divides (Megatron-LM's schedule); got --pp {} "
                            "and {} micro-batches",
                            v, pp, m));
          continue;
        }
        if (pp * v > segments) continue;
        // Megatron-LM gives each chunk the same number of layers, or one fewer to the chunks at
        // the ends where they do not divide (chunk_layer_ends); every chunk needs a layer.
        if (!joint && chain_.layers < pp * v) {
          if (r.pipeline_stages && r.interleave)
            throw InputError(fmt::format("--pp {} --interleave {}: {} layers do not fill {} chunks",
                                         pp, v, chain_.layers, pp * v));
          continue;
        }
        for (Recompute rc : recomputes)
          for (int z : zeros)
            for (bool sp : sps) {
              std::vector<bool> tpos{false};
              if (r.tp_comm_overlap)
                tpos = {*r.tp_comm_overlap && sp && can_overlap_tp};
              else if (joint && sp && can_overlap_tp)
                tpos = {false, true};
              for (bool tpo : tpos)
                for (DeviceOrder order : orders)
                  for (bool megatron : segment_plans)
                    for (int ep : eps)
                      for (TokenDispatcher d : dispatchers)
                        for (bool epo : ep_overlaps)
                          for (ContextExchange x : exchanges) {
                            if (ep == 1 && (d != dispatchers.front() || epo)) continue;
                            if (cp == 1 && x != exchanges.front()) continue;
                            out.push_back({tp, pp, dp, m, v, per_replica / m, rc, z, sp, overlap,
                                           tpo, order, megatron, ep, d, epo, cp, x});
                          }
            }
      }
    }
  }

  // The expert-parallel degrees a layout of tp x dp devices per pipeline rank can take (dp: the
  // copies, context-parallel ranks included): 1 (the replica's own split), and multiples of tp
  // that divide tp x dp and the experts (Megatron-Core folds EP into the tensor-, context- and
  // data-parallel ranks: tp x cp x dp = ep x edp with ETP 1).
  std::vector<int> expert_parallel_degrees(int tp, int dp) const {
    const int asked = options_.request.expert_parallel;
    if (experts_ == 0) {
      if (asked > 1)
        throw InputError(
            fmt::format("--ep {}: '{}' has no mixture-of-experts layers", asked, model_.name));
      return {1};
    }
    auto fits = [&](int ep) {
      return ep == 1 || (ep % tp == 0 && (tp * dp) % ep == 0 && experts_ % ep == 0);
    };
    if (asked) {
      if (!fits(asked)) {
        if (options_.request.tensor_parallel && options_.request.pipeline_stages)
          throw InputError(fmt::format(
              "--ep {}: expert parallelism spreads the {} experts over a multiple of --tp {} "
              "that divides the {} devices of a pipeline stage (tp x dp) and the experts",
              asked, experts_, tp, tp * dp));
        return {};
      }
      return {asked};
    }
    std::vector<int> out{1};
    for (int ep = tp; ep <= tp * dp; ep *= 2)
      if (ep > 1 && fits(ep)) out.push_back(ep);
    return out;
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

  // The devices of pipeline rank `rank` that exchange tokens in one all-to-all (the first expert
  // group: tp devices of ep / tp consecutive copies), and those holding the same experts (one
  // device a group, every ep / tp copies).
  std::vector<int> expert_group(const Layout& l, int rank) const {
    std::vector<int> g;
    for (int i = 0; i < l.ep; ++i) g.push_back(nth_device(l, rank, i));
    return g;
  }
  std::vector<int> expert_data_group(const Layout& l, int rank) const {
    std::vector<int> g;
    for (int i = 0; i < l.tp * l.copies(); i += l.ep) g.push_back(nth_device(l, rank, i));
    return g;
  }
  // The devices of pipeline rank `rank` holding the same weights (tensor-parallel rank 0 of every
  // sequence shard of every copy), which synchronise them.
  std::vector<int> data_parallel_group(const Layout& l, int rank) const {
    std::vector<int> g;
    for (int i = 0; i < l.tp * l.copies(); i += l.tp) g.push_back(nth_device(l, rank, i));
    return g;
  }
  // The context-parallel ranks of the first copy of pipeline rank `rank`, one ring per
  // tensor-parallel rank.
  std::vector<std::vector<int>> context_groups(const Layout& l, int rank) const {
    std::vector<std::vector<int>> groups(l.tp);
    for (int j = 0; j < l.tp; ++j)
      for (int c = 0; c < l.cp; ++c) groups[j].push_back(device(l, rank, 0, c * l.tp + j));
    return groups;
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

  // The plan of segment kind `kind` on `tp` devices, made for micro-batches of `b` samples.
  KindPlan make_kind_plan(int kind, int tp, std::int64_t b, bool megatron_only) {
    const Segment& s = chain_.segments[chain_.representative[kind]];
    const Graph serial = segment_graph(model_, s, b);
    if (options_.joint && megatron_only) {
      // Megatron-LM's split of the segment with the algebraic rewrites the joint search chose
      // for it (a fused attention kernel, say).
      std::vector<AppliedSubstitution> applied;
      Graph rewritten = serial;
      for (const auto& a : kind_plan(kind, tp, b, false).applied) {
        const Rule* rule = rules().find(a.rule);
        if (!rule || rule->kind != RuleKind::Algebraic) continue;
        if (std::any_of(applied.begin(), applied.end(),
                        [&](const AppliedSubstitution& done) { return done.rule == a.rule; }))
          continue;
        rewritten = apply_everywhere(rewritten, *rule, {a.rule, ""}, {1}, applied);
      }
      ExpertStrategy megatron = megatron_tensor_parallel(rewritten, tp);
      // Only where the search's rules, less the vetoed ones, can make it.
      if (!std::all_of(megatron.applied.begin(), megatron.applied.end(),
                       [&](const AppliedSubstitution& a) { return rule_allowed(a); }))
        return kind_plan(kind, tp, b, false);
      applied.insert(applied.end(), megatron.applied.begin(), megatron.applied.end());
      return KindPlan{std::move(megatron.graph), b, megatron.name, std::move(applied)};
    }
    ExpertStrategy megatron = megatron_tensor_parallel(serial, tp);
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

  const KindPlan& kind_plan(int kind, int tp, std::int64_t b, bool megatron_only) {
    const auto key = std::make_tuple(kind, tp, b, megatron_only);
    if (auto it = exact_.find(key); it != exact_.end()) return it->second;
    // Planned once per kind and replica size, at the first micro-batch size asked for; other
    // sizes take the same plan with the batch changed, where its degrees divide them.
    const auto base_key = std::make_tuple(kind, tp, megatron_only);
    auto base = base_.find(base_key);
    if (base == base_.end())
      base = base_.emplace(base_key, make_kind_plan(kind, tp, b, megatron_only)).first;
    KindPlan kp;
    try {
      kp = base->second;
      if (kp.batch != b) kp.plan = rebatch(kp.plan, kp.batch, b);
      kp.batch = b;
    } catch (const ShapeError&) {
      kp = make_kind_plan(kind, tp, b, megatron_only);
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
  // experts spread over ep devices (1: the replica's own split).
  const SegmentProfile& profile(int kind, int tp, std::int64_t b, bool megatron_only, int cp,
                                int ep) {
    if (kind_experts(kind).operators == 0) ep = 1;  // the same segment whatever the experts' split
    const auto key = std::make_tuple(kind, tp, b, megatron_only, cp, ep);
    if (auto it = profiles_.find(key); it != profiles_.end()) return it->second;
    SegmentProfile p;  // infeasible unless the segment can be planned at this micro-batch size
    try {
      const Graph& plan = kind_plan(kind, tp, b, megatron_only).plan;
      Graph shard = context_shard(plan, sequence_, cp);
      // Each device's Experts task at its expert-parallel shape: the experts it holds, fed by the
      // tokens of ep / (the replica's expert degree) replicas (task_work's "expert_parallel").
      if (ep > 1)
        for (const auto& [id, n] : plan.nodes())
          if (n.op.type == OpType::Experts) {
            const int held = shard.shape(n.inputs[2]).dims[0].degree;
            if (ep % held == 0 && ep > held)
              shard.mutable_node(id).op.attrs.set("expert_parallel", std::int64_t{ep / held});
          }
      p = profile_segment(shard, replica_costs(tp));
    } catch (const ShapeError&) {
      // A micro-batch size the model's shapes do not take (a Reshape holding the batch).
    }
    return profiles_.emplace(key, p).first->second;
  }

  // Forward dense FLOPs of a kind at `b` samples, and of those its attention's products.
  std::pair<double, double> kind_flops(int kind, std::int64_t b) {
    const auto key = std::make_pair(kind, b);
    if (auto it = flops_.find(key); it != flops_.end()) return it->second;
    Graph serial;
    try {
      serial = segment_graph(model_, chain_.segments[chain_.representative[kind]], b);
    } catch (const ShapeError&) {
      return flops_.emplace(key, std::make_pair(0.0, 0.0)).first->second;  // profile: infeasible
    }
    double core = 0;
    for (const auto& [id, n] : serial.nodes())
      // What selective recomputation runs again; a fused kernel's backward recomputes anyway.
      if (is_attention(n.op.type) && !runs_fused_attention(n, machine_.device(0)))
        core += attention_task(serial, n).core_flops();  // the scores and the context
    return flops_.emplace(key, std::make_pair(dense_forward_flops(serial), core)).first->second;
  }

  // Contiguous chunks of segments: Megatron-LM's layer counts, or balanced by time.
  std::vector<std::pair<int, int>> chunks(const std::vector<double>& t, int count) const {
    const int n = static_cast<int>(t.size());
    std::vector<std::pair<int, int>> out;
    if (!options_.joint) {
      const std::vector<int> ends = chunk_layer_ends(chain_.layers, count);
      int first = 0;
      for (int c = 0; c < count; ++c) {
        int last = first;
        while (last + 1 < n && (c + 1 == count || layer_of_[last + 1] < ends[c])) ++last;
        if (c + 1 == count) last = n - 1;
        out.emplace_back(first, last);
        first = last + 1;
      }
      return out;
    }
    // The smallest bottleneck a greedy split into `count` chunks reaches (binary search on it).
    auto split = [&](double limit) {
      std::vector<std::pair<int, int>> parts;
      int first = 0;
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        if (j > first && sum + t[j] > limit) {
          parts.emplace_back(first, j - 1);
          first = j;
          sum = 0;
        }
        sum += t[j];
      }
      parts.emplace_back(first, n - 1);
      return parts;
    };
    double lo = *std::max_element(t.begin(), t.end());
    double hi = std::accumulate(t.begin(), t.end(), 0.0);
    for (int i = 0; i < 50 && hi - lo > 1e-9 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      (static_cast<int>(split(mid).size()) <= count ? hi : lo) = mid;
    }
    out = split(hi);
    // Fewer chunks than asked: split the longest ones (every chunk needs a segment).
    while (static_cast<int>(out.size()) < count) {
      auto it = std::max_element(out.begin(), out.end(), [](auto a, auto b) {
        return a.second - a.first < b.second - b.first;
      });
      if (it->second == it->first) break;
      const int mid = (it->first + it->second) / 2;
      const auto right = std::make_pair(mid + 1, it->second);
      it->second = mid;
      out.insert(it + 1, right);
    }
    return out;
  }

  // Device `index` (tensor-parallel rank + tp x context-parallel rank) of copy `copy` of
  // pipeline rank `rank`.
  int device(const Layout& l, int rank, int copy, int index) const {
    return PipelineGrid{l.tp, l.pp, l.dp, l.order, l.cp}.device(rank, copy, index);
  }
  // The i-th device of pipeline rank `rank` in Megatron-Core's rank order inside a stage: tensor-
  // parallel ranks, then context-parallel ones, then copies.
  int nth_device(const Layout& l, int rank, int i) const {
    return device(l, rank, i / (l.tp * l.cp), i % (l.tp * l.cp));
  }

  // Sending one activation of `bytes` from pipeline rank a to rank b: each of the replica's devices
  // sends 1/tp of it to its peer and the receivers all-gather it (Megatron-LM's scatter/gather);
  // with sequence parallelism the activation is split along the sequence already and stays so.
  double p2p_time(const Layout& l, int a, int b, double bytes) const {
    std::vector<Transfer> moves;
    std::vector<int> replica;
    for (int j = 0; j < l.tp; ++j) {
      moves.push_back({device(l, a, 0, j), device(l, b, 0, j), bytes / l.tp});
      replica.push_back(device(l, b, 0, j));
    }
    const double gather = l.sp ? 0.0 : costs_.allreduce_time(replica, bytes) / 2;
    return costs_.transfers_time(moves) + gather;
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
    p.zero_stage = l.zero;
    p.sequence_parallel = l.sp;
    p.overlap_grad_reduce = l.overlap;
    p.tp_comm_overlap = l.tp_overlap;
    p.device_order = l.order;
    p.dtype = dtype_;
    p.expert_parallel = l.ep;
    p.expert_data_parallel = l.ep > 1 ? l.tp * l.copies() / l.ep : l.copies();
    p.context_parallel = l.cp;
    p.context_exchange = l.cp_exchange;
    p.token_dispatcher = l.dispatcher;
    p.ep_comm_overlap = l.ep_overlap;
    const int n = static_cast<int>(chain_.segments.size());
    // Expert parallelism: each MoE layer's tokens go to the devices of their experts and back by
    // all-to-all (dispatch and combine forward, their gradients backward), each device sending
    // its 1/tp of the micro-batch's tokens (sequence-parallel shards) times top-k; none of it
    // overlapped (Megatron-Core's all-to-all dispatcher without its 1F1B overlap).
    std::vector<double> alltoall(n, 0.0);
    double alltoall_bytes = 0;                   // per micro-batch, every replica's devices
    double alltoall_inter_node = 0;              // of those, across nodes
    std::map<double, DispatchCost> alltoall_of;  // by message bytes
    const double element = static_cast<double>(size_of(dtype_));
    std::vector<double> time(n), saved(n), work(n, 0.0), forward(n), backward(n), comm(n);
    double bytes = 0;  // per micro-batch, inside the replicas
    // Context parallelism: each attention's keys and values exchanged among the sequence shards
    // (context_exchange.h), per segment and micro-batch.
    std::vector<double> exchange(n, 0.0), exchange_forward(n, 0.0);
    double exchange_bytes = 0, exchange_workspace = 0;  // per micro-batch, a copy's devices
    std::map<int, ContextExchangeCost> exchange_of;     // by segment kind
    double recompute_flops = 0, flops = 0;
    std::vector<const SegmentProfile*> prof(n);
    for (int j = 0; j < n; ++j) {
      const int kind = chain_.segments[j].kind;
      const SegmentProfile& s = profile(kind, l.tp, l.b, l.megatron_segments, l.cp, l.ep);
      prof[j] = &s;
      if (!s.feasible) {
        p.iteration_time = kInfinity;
        p.peak_memory = kInfinity;
        return p;
      }
      const auto [dense, core] = kind_flops(kind, l.b);
      flops += 3 * dense;
      double extra = 0, keep = s.activations;
      // Sequence parallelism splits what tensor parallelism leaves whole (norms, residual sums)
      // along the sequence: 1/tp of its activations and of its work on each device.
      const double sp_left = l.sp ? 1.0 - 1.0 / l.tp : 0.0;
      const double sp_share = s.whole_activations * sp_left;
      forward[j] = s.forward - s.whole_forward * sp_left;
      backward[j] = s.backward - s.whole_backward * sp_left;
      comm[j] = s.communication;
      if (const KindExperts& ex = kind_experts(kind); l.ep > 1 && ex.operators > 0) {
        const double message =
            static_cast<double>(l.b) * ex.tokens_per_sample / (l.tp * l.cp) * ex.hidden * element;
        auto it = alltoall_of.find(message);
        if (it == alltoall_of.end())
          it = alltoall_of
                   .emplace(message, dispatch_cost(l.dispatcher, experts_, top_k_,
                                                   expert_group(l, 0), message, costs_))
                   .first;
        alltoall[j] = 4.0 * ex.operators * it->second.seconds;
        // Overlapped, they are placed once the chunks are known (the warm-up's stay exposed).
        if (!l.ep_overlap) {
          forward[j] += alltoall[j] / 2;
          backward[j] += alltoall[j] / 2;
        }
        // Every expert group of the stage's tp x dp devices: dp x tp / ep of them a replica's.
        alltoall_bytes += 4.0 * ex.operators * it->second.bytes * l.tp * l.cp / l.ep;
        alltoall_inter_node +=
            4.0 * ex.operators * it->second.inter_node_bytes * l.tp * l.cp / l.ep;
      }
      if (l.tp_overlap) {
        // Each pass's collectives (half the segment's) pipelined with its compute.
        const double half = s.communication / 2;
        const int sms = machine_.device(0).sm_count;
        const double f =
            overlapped_pass(forward[j] - half, half, kTpOverlapSplits, kTpOverlapSms, sms);
        const double b =
            overlapped_pass(backward[j] - half, half, kTpOverlapSplits, kTpOverlapSms, sms);
        comm[j] = (f - (forward[j] - half)) + (b - (backward[j] - half));
        forward[j] = f;
        backward[j] = b;
      }
      if (l.cp > 1 && !s.attentions.empty()) {
        auto it = exchange_of.find(kind);
        if (it == exchange_of.end()) {
          ContextExchangeCost sum;
          for (const auto& a : s.attentions) {
            const ContextExchangeCost c =
                context_exchange_cost(l.cp_exchange, context_groups(l, 0), a.kv_bytes,
                                      a.products_forward, a.products_backward, costs_);
            sum.forward += c.forward;
            sum.backward += c.backward;
            sum.bytes += c.bytes;
            sum.workspace = std::max(sum.workspace, c.workspace);
          }
          it = exchange_of.emplace(kind, sum).first;
        }
        const ContextExchangeCost& c = it->second;
        forward[j] += c.forward;
        backward[j] += c.backward;
        comm[j] += c.forward + c.backward;
        exchange[j] = c.forward + c.backward;
        exchange_forward[j] = c.forward;
        exchange_bytes += c.bytes;
        exchange_workspace = std::max(exchange_workspace, c.workspace);
      }
      if (block_[j] && l.recompute == Recompute::Full) {
        extra = forward[j];
        keep = s.input_bytes / (l.sp ? l.tp : 1);
        recompute_flops += dense;
      } else if (block_[j] && l.recompute == Recompute::Selective) {
        extra = s.attention_core;
        keep = s.activations - s.attention_internals - sp_share;
        recompute_flops += core;
      } else {
        keep = s.activations - sp_share;
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
        rank_replica_experts(l.pp, 0.0), rank_expert_fp8(l.pp, 0.0);
    double p2p_bytes = 0, fill_p2p = 0;
    const bool overlap_p2p = sends_overlap_compute(l.v, l.overlap);
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
        sp.forward += forward[j];
        sp.backward += backward[j] + work[j];
        sp.parameters += s.parameters;
        const double recomputed = l.recompute == Recompute::Full && block_[j] ? 1.5 : 1.0;
        rank_alltoall[rank] += alltoall[j] * recomputed;
        rank_exchange[rank] += exchange[j] * recomputed;
        add_segment_exchanges(sp.exchanges, alltoall[j], l.ep_overlap, exchange_forward[j],
                              exchange[j], recomputed > 1);
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
        const int kind = chain_.segments[j].kind;
        double fp8_parameters = s.fp8_parameters;
        if (l.ep > 1 && kind_experts(kind).operators > 0) {
          // The experts leave the replica's plan: 1/ep of them on each device, synchronised
          // over the devices holding the same ones (their fp8 copies with them).
          const double held = kind_experts(kind).parameters / l.ep;
          const KindPlan& kp = kind_plan(kind, l.tp, l.b, l.megatron_segments);
          sp.parameters += held - kp.expert_parameters;
          if (kp.expert_fp8_parameters > 0) {
            fp8_parameters +=
                held * kp.expert_fp8_parameters / kp.expert_parameters - kp.expert_fp8_parameters;
            rank_expert_fp8[rank] += held * kp.expert_fp8_parameters / kp.expert_parameters;
          }
          rank_expert_params[rank] += held;
          chunk_experts += held;
        } else if (kind_experts(kind).operators > 0) {
          // The experts stay in the replica's plan, among the dense weights.
          const KindPlan& kp = kind_plan(kind, l.tp, l.b, l.megatron_segments);
          rank_replica_experts[rank] += kp.expert_parameters;
          rank_expert_fp8[rank] += kp.expert_fp8_parameters;
        }
        rank_fp8_params[rank] += fp8_parameters;
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
    const double tied_sync = tie_weights(l, parts, rank_params);
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
      // Rank r's weights of `parameters` elements synchronised over the devices of `group`.
      auto sync_over = [&](double parameters, const std::vector<int>& group) {
        return data_parallel_sync(
            {.parameters = parameters,
             .gradient_bytes = gradient_bytes(dtype_),
             .weight_bytes = size,
             .zero = l.zero,
             .micro_batches = l.m,
             .overlap = l.overlap,
             .forward = rank_forward[r],
             .backward = rank_backward[r],
             .data_parallel = static_cast<int>(group.size()),
             .sms = dev.sm_count,
             .comm_sms = kNcclSms},
            [&](double buffer) { return costs_.allreduce_time(group, buffer); });
      };
      const DataSync sync = sync_over(rank_params[r], data_parallel_group(l, r));
      // The experts' weights, each held by the expert-data-parallel devices of its shard, are
      // synchronised among those (one group per device of an expert group).
      const int edp = p.expert_data_parallel;
      const DataSync expert_sync = rank_expert_params[r] > 0
                                       ? sync_over(rank_expert_params[r], expert_data_group(l, r))
                                       : DataSync{};
      p.sync_time = std::max(p.sync_time, sync.exposed + expert_sync.exposed);
      p.rank_sync_total.push_back(sync.total + expert_sync.total);
      p.rank_sync_exposed.push_back(sync.exposed + expert_sync.exposed);
      sync_bytes += sync.bytes * l.tp + expert_sync.bytes * l.ep;
      const double shard = (l.zero >= 1 ? rank_params[r] / l.copies() : rank_params[r]) +
                           (l.zero >= 1 ? rank_expert_params[r] / edp : rank_expert_params[r]);
      p.update_time = std::max(p.update_time, costs_.update_time(shard * 4.0, dev));
      MemoryBreakdown mem =
          parameter_memory(rank_params[r], dtype_, options_.optimizer, l.zero, l.copies());
      if (rank_expert_params[r] > 0) {
        const MemoryBreakdown experts =
            parameter_memory(rank_expert_params[r], dtype_, options_.optimizer, l.zero, edp);
        mem.weights += experts.weights;
        mem.gradients += experts.gradients;
        mem.optimizer += experts.optimizer;
      }
      set_expert_share(mem,
                       rank_expert_params[r] > 0 ? rank_expert_params[r] : rank_replica_experts[r],
                       rank_expert_params[r] > 0 ? edp : l.copies(), rank_expert_fp8[r], dtype_,
                       options_.optimizer, l.zero);
      mem.activations = in_flight_micro_batches(r, l.pp, l.m, l.v) * rank_saved[r];
      // FP8 training keeps each fp8 GEMM's weight cast to fp8 and transposed beside the bf16
      // one (Transformer Engine's cached fp8 weights): 2 more bytes a parameter.
      mem.weights += 2.0 * rank_fp8_params[r];
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
    p.alltoall_bytes = alltoall_bytes * l.m * l.dp;
    p.alltoall_inter_node_bytes = alltoall_inter_node * l.m * l.dp;
    p.experts = experts_;
    p.top_k = top_k_;
    p.cp_time = l.m * *std::max_element(rank_exchange.begin(), rank_exchange.end());
    p.cp_bytes = exchange_bytes * l.m * l.dp;
    // FLOPs over the whole batch: the micro-batch's times the micro-batches of every copy.
    const double scale = static_cast<double>(l.m) * l.dp;
    p.model_flops = (flops + recompute_flops) * scale;
    p.tflops_per_device =
        p.iteration_time > 0 ? p.model_flops / p.iteration_time / machine_.num_devices() / 1e12 : 0;
    return p;
  }

  // A tied weight and its partner (tied_weights.h): the segments that read them, and the table's
  // elements.
  struct TiedPair {
    int segment = 0, partner_segment = 0;
    double elements = 0;
  };

  void find_tied_weights() {
    std::map<NodeId, int> segment_of;
    for (int j = 0; j < static_cast<int>(chain_.segments.size()); ++j)
      for (NodeId id : chain_.segments[j].nodes)
        for (const auto& in : model_.node(id).inputs) segment_of.emplace(in.node, j);
    for (NodeId w : tied_copies(model_)) {
      const auto partner = tied_partner(model_, w);
      const auto a = segment_of.find(w), b = segment_of.find(*partner);
      if (a == segment_of.end() || b == segment_of.end()) continue;
      tied_.push_back(
          {a->second, b->second, static_cast<double>(model_.node(w).outputs.at(0).num_elements())});
    }
  }

  // Tied tables held by one rank are one tensor there (a rank's parameters count it once); held
  // by two, each keeps a copy, and the copies' gradients are all-reduced between the two after
  // the backward pass, before the data-parallel synchronisation finishes (Megatron-LM's embedding
  // group): the slowest such all-reduce.
  double tie_weights(const Layout& l, const std::vector<std::pair<int, int>>& parts,
                     std::vector<double>& rank_params) const {
    if (tied_.empty()) return 0;
    std::vector<int> rank_of(chain_.segments.size(), 0);
    for (int c = 0; c < static_cast<int>(parts.size()); ++c)
      for (int j = parts[c].first; j <= parts[c].second; ++j) rank_of[j] = c % l.pp;
    double exposed = 0;
    for (const TiedPair& t : tied_) {
      const int a = rank_of[t.segment], b = rank_of[t.partner_segment];
      const double per_device = t.elements / l.tp;
      if (a == b) {
        rank_params[a] -= per_device;
        continue;
      }
      exposed = std::max(exposed, costs_.allreduce_time({device(l, a, 0, 0), device(l, b, 0, 0)},
                                                        per_device * gradient_bytes(dtype_)));
    }
    return exposed;
  }

  const Graph& model_;
  const MachineSpec& machine_;
  const PipelineOptions& options_;
  const SegmentChain chain_;
  std::vector<TiedPair> tied_;
  const CostModel costs_;
  const DataType dtype_;
  std::vector<int> layer_of_;  // per segment: the layer it belongs to
  std::vector<bool> block_;
  double memory_ = 0;
  bool transformer_ = false;
  std::map<int, std::unique_ptr<CostModel>> replica_costs_;
  std::map<std::tuple<int, int, bool>, KindPlan> base_;
  std::map<std::tuple<int, int, std::int64_t, bool>, KindPlan> exact_;
  std::map<std::tuple<int, int, std::int64_t, bool, int, int>, SegmentProfile> profiles_;
  std::map<std::pair<int, std::int64_t>, std::pair<double, double>> flops_;
  std::map<int, KindExperts> experts_of_;
  std::int64_t experts_ = 0;  // experts of the model's mixture-of-experts layers (0: none)
  std::int64_t top_k_ = 0;
  std::int64_t sequence_ = 0;  // tokens of a sample's sequence (0: no attention)
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
