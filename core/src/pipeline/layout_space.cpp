#include "layout_space.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pipeline/alltoall_overlap.h"

namespace unity::pipeline_layouts {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace

LayoutSpace::LayoutSpace(const LayoutFacts& facts, const LayoutRequest& request,
                         const MachineSpec& machine)
    : facts_(facts), request_(request), machine_(machine) {
  const auto& r = request_;
  const int n = machine_.num_devices();
  const int per_node = machine_.devices_per_node;
  if (facts_.batch <= 0)
    throw InputError(fmt::format("'{}' has no batch size to plan", facts_.model));
  // A launcher whose experts spread over data-parallel copies only (--launcher deepspeed).
  const bool copies_only = r.experts_over_copies_only && facts_.experts > 0;
  if (copies_only) {
    const auto lacks = [&](const std::string& flag, const std::string& what) {
      throw InputError(
          fmt::format("--launcher {}: {} asks for {}, which its mixture-of-experts layer has not",
                      r.launcher, flag, what));
    };
    if (r.tensor_parallel > 1)
      lacks(fmt::format("--tp {}", r.tensor_parallel),
            "tensor parallelism (it spreads experts over data-parallel copies only)");
    if (r.dispatcher && *r.dispatcher != TokenDispatcher::AllToAll)
      lacks("--dispatcher", "another dispatcher than its own all-to-all");
    if (r.ep_comm_overlap.value_or(false))
      lacks("--overlap-moe-expert-parallel-comm",
            "all-to-alls overlapped with another micro-batch");
    if (r.zero_stage > r.max_zero_with_experts)
      lacks(fmt::format("--zero {}", r.zero_stage),
            fmt::format("ZeRO beyond stage {}", r.max_zero_with_experts));
  }
  if (facts_.experts > 0 && r.dispatcher == TokenDispatcher::DeepEp &&
      r.expert_tensor_parallel > 1 && r.expert_parallel > 1)
    throw InputError(
        "--dispatcher deepep sends each token to the devices holding its experts whole; with "
        "--etp > 1 Unity plans Megatron-Core's all-to-all dispatcher (--dispatcher alltoall)");
  // What Megatron-Core's all-to-all overlap asserts, where a launchable plan fixes what it
  // refuses (what is still searched counts as taken: EP, and virtual stages left open).
  if (r.launchable && r.ep_comm_overlap.value_or(false) && facts_.experts > 0) {
    const auto misses =
        alltoall_overlap_misses({r.expert_parallel == 1 ? 1 : 2, std::max(1, r.pipeline_stages),
                                 r.interleave == 0 ? 2 : r.interleave,
                                 r.recompute.value_or(Recompute::None), facts_.half_precision});
    if (!misses.empty())
      throw InputError(fmt::format(
          "--overlap-moe-expert-parallel-comm: Megatron-Core overlaps the all-to-alls only with "
          "{}, and the request has {}",
          misses.front().needs, misses.front().has));
  }
  std::vector<int> tps;
  if (copies_only) {
    tps = {1};
  } else if (r.tensor_parallel) {
    const int tp = r.tensor_parallel;
    if (tp > per_node || per_node % tp != 0 || n % tp != 0)
      throw InputError(fmt::format(
          "--tp {}: tensor parallelism stays inside a node, so it must divide the {} devices of "
          "a {} node (and the {} devices in use)",
          tp, per_node, machine_.name, n));
    tps = {tp};
  } else {
    // A degree that splits no attention's heads evenly leaves the layers whole on every device
    // of a replica; on a large NVLink domain (a GB200 rack's 72) those degrees are most of a
    // node's divisors, and searching each segment kind on 72 devices takes minutes.
    for (int tp : divisors(std::min(per_node, n)))
      if (per_node % tp == 0 && n % tp == 0 &&
          (facts_.head_groups <= 0 || facts_.head_groups % tp == 0))
        tps.push_back(tp);
  }
  // A launcher that splits the sequence over TP x 2 x CP (torchtitan): a replica it does not
  // split is left out, or refused where --tp (and --cp) fixed it.
  const std::int64_t sequence = facts_.transformer ? facts_.sequence : 0;
  const auto splits = [&](int tp, int cp) {
    return !r.sequence_splits_over_tp_and_two_cp || sequence <= 0 ||
           sequence % (std::int64_t{tp} * 2 * cp) == 0;
  };
  bool any_split = false, unsplit = false;
  for (int tp : tps)
    for (int cp : context_parallel_degrees(tp)) {
      if (!splits(tp, cp)) {
        unsplit = true;
        if (r.tensor_parallel && (r.context_parallel || cp == 1))
          throw InputError(fmt::format(
              "--launcher {}: --tp {}{} splits the sequence of {} tokens over TP x 2 x CP = {}, "
              "which does not divide it (torchtitan's ParallelDims.seq_len_divisor)",
              r.launcher, tp, cp > 1 ? fmt::format(" --cp {}", cp) : std::string(), sequence,
              tp * 2 * cp));
        continue;
      }
      any_split = true;
      if (cp == 1 || r.context_parallel) {
        add_stages(tp, cp);
        continue;
      }
      // A searched context-parallel degree that what was fixed does not fit is skipped.
      const auto stages = stages_.size();
      const auto grids = grids_.size();
      const auto size = size_;
      try {
        add_stages(tp, cp);
      } catch (const InputError&) {
        stages_.resize(stages);
        grids_.resize(grids);
        size_ = size;
      }
    }
  if (unsplit && !any_split)
    throw InputError(fmt::format(
        "--launcher {}: the sequence of {} tokens splits over no TP x 2 x CP the devices allow "
        "(torchtitan's ParallelDims.seq_len_divisor; an odd sequence splits over none)",
        r.launcher, sequence));
  if (grids_.empty() && r.pipeline_stages && !r.tensor_parallel &&
      std::none_of(tps.begin(), tps.end(),
                   [&](int tp) { return (n / tp) % r.pipeline_stages == 0; }))
    throw InputError(fmt::format("--pp {}: {} devices do not split into {} stages",
                                 r.pipeline_stages, n, r.pipeline_stages));
}

// The context-parallel degrees with `tp`: those the model's sequence splits into 2 x cp chunks
// and the machine's devices into tp x cp replicas. Searched in joint mode (powers of two), 1 in
// expert mode unless asked.
std::vector<int> LayoutSpace::context_parallel_degrees(int tp) const {
  const auto& r = request_;
  const int n = machine_.num_devices();
  const std::int64_t sequence = facts_.sequence;
  auto fits = [&](int cp) {
    return cp == 1 || (sequence > 0 && sequence % (2 * cp) == 0 && n % (tp * cp) == 0);
  };
  if (r.context_parallel) {
    const int cp = r.context_parallel;
    if (cp > 1 && sequence == 0)
      throw InputError(
          fmt::format("--cp {}: '{}' has no attention to split the sequence of", cp, facts_.model));
    if (cp > 1 && sequence % (2 * cp) != 0)
      throw InputError(fmt::format(
          "--cp {}: the sequence of {} tokens does not split into 2 x {} chunks (context "
          "parallelism deals each rank two chunks, one from each end, to balance causal work)",
          cp, sequence, cp));
    if (!fits(cp)) {
      if (!r.tensor_parallel) return {};
      throw InputError(
          fmt::format("--cp {}: {} devices do not split into replicas of --tp {} x --cp {} devices",
                      cp, n, tp, cp));
    }
    return {cp};
  }
  std::vector<int> out{1};
  if (facts_.joint && facts_.transformer)
    for (int cp = 2; tp * cp <= n; cp *= 2)
      if (fits(cp)) out.push_back(cp);
  return out;
}

// The layouts of replicas of tp x cp devices.
void LayoutSpace::add_stages(int tp, int cp) {
  const auto& r = request_;
  // A launcher whose pipeline gives every stage as many layers (--launcher deepspeed).
  const auto unequal_stages = [&](int pp) {
    return r.stages_of_equal_layers && pp > 1 && facts_.layers % pp != 0;
  };
  const int n = machine_.num_devices();
  const int replicas = n / (tp * cp);
  std::vector<int> pps;
  if (r.pipeline_stages) {
    const int pp = r.pipeline_stages;
    if (replicas % pp != 0) {
      // A searched replica size that leaves too few replicas is skipped; a fixed one fails.
      if (!r.tensor_parallel) return;
      throw InputError(fmt::format(
          "--pp {}: {} devices / (--tp {}{}) = {} stage replicas, which {} stages do not divide",
          pp, n, tp, cp > 1 ? fmt::format(" x --cp {}", cp) : std::string(), replicas, pp));
    }
    if (pp > facts_.segments)
      throw InputError(fmt::format("--pp {}: '{}' has only {} segments to make stages of", pp,
                                   facts_.model, facts_.segments));
    if (unequal_stages(pp))
      throw InputError(fmt::format(
          "--launcher {}: --pp {} asks for stages of unequal layers ({} layers), which its "
          "pipeline engine has not",
          r.launcher, pp, facts_.layers));
    pps = {pp};
  } else {
    for (int pp : divisors(replicas))
      if (pp <= facts_.segments && !unequal_stages(pp)) pps.push_back(pp);
  }
  for (int pp : pps) {
    const int dp = replicas / pp;
    if (dp > 1 && !facts_.batch_statistics.empty()) {
      if (r.pipeline_stages && r.tensor_parallel)
        throw InputError(fmt::format(
            "{} normalises over the whole batch, so the batch cannot split over {} data-parallel "
            "copies ({} devices / (--tp {} x --pp {})): use more tensor-parallel or pipeline "
            "devices, or fewer devices",
            facts_.batch_statistics, dp, n, tp, pp));
      continue;
    }
    if (facts_.batch % dp != 0) {
      if (r.pipeline_stages && r.tensor_parallel)
        throw InputError(fmt::format(
            "--batch {} does not divide over {} data-parallel copies ({} devices / (--tp {} x "
            "--pp {}{}))",
            facts_.batch, dp, n, tp, pp, cp > 1 ? fmt::format(" x --cp {}", cp) : std::string()));
      continue;
    }
    add_grids(tp, cp, pp, dp, facts_.batch / dp);
  }
}

void LayoutSpace::add_grids(int tp, int cp, int pp, int dp, std::int64_t per_replica) {
  const auto& r = request_;
  const bool joint = facts_.joint;
  StageChoices stage{tp, cp, pp, dp, false, {}, {}, {}};
  std::vector<int> ms;
  if (!facts_.batch_statistics.empty()) {
    if (r.micro_batches > 1)
      throw InputError(fmt::format(
          "--micro-batches {}: {} normalises over the whole batch, which micro-batches would "
          "split",
          r.micro_batches, facts_.batch_statistics));
    ms = {1};
  } else if (r.micro_batches) {
    if (per_replica % r.micro_batches != 0)
      throw InputError(
          fmt::format("--micro-batches {}: the {} sample{} of each data-parallel copy "
                      "do not split into that many",
                      r.micro_batches, per_replica, per_replica == 1 ? "" : "s"));
    ms = {r.micro_batches};
  } else {
    // Micro-batches of up to 64 samples (larger ones only add memory).
    for (std::int64_t b = 1; b <= std::min<std::int64_t>(per_replica, 64); ++b)
      if (per_replica % b == 0) ms.push_back(static_cast<int>(per_replica / b));
  }
  if (r.recompute) {
    stage.recomputes = {{*r.recompute, r.recompute_modules}};
  } else if (joint) {
    stage.recomputes = {{Recompute::None, {}}, {Recompute::Selective, {}}, {Recompute::Full, {}}};
    // Mixture-of-experts layers keep most of a layer's activations inside the experts.
    if (facts_.experts > 0 && r.recompute_module_sets)
      for (const RecomputeModules& modules : kMoeRecipeRecomputeModules)
        if (facts_.grouped_gemm || !r.launchable ||
            (modules.bits & RecomputeModules::kMoeActivation) == 0)
          stage.recomputes.push_back({Recompute::Selective, modules});
  } else {
    stage.recomputes = {{Recompute::Full, {}}};  // Megatron-LM's published runs recompute all
  }
  if (r.zero_stage >= 0) {
    // Asked for, ZeRO 2 and 3 combine with pipelines too: every micro-batch then reduce-scatters
    // its gradients (and ZeRO 3 all-gathers the weights for every pass), which the cost counts.
    stage.zeros = {r.zero_stage};
  } else if (joint) {
    // With pipelines the search goes up to ZeRO 2, which Llama 3's FSDP ran with its pipeline
    // (each micro-batch's gradients reduced behind the next one's compute); ZeRO 3 would gather
    // the weights for every pass of every micro-batch.
    stage.zeros = pp > 1 ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1, 2, 3};
  } else {
    stage.zeros = {0};
  }
  // A launcher without ZeRO beyond a stage with pipelines, or with experts (--launcher deepspeed).
  if (pp > 1) std::erase_if(stage.zeros, [&](int z) { return z > r.max_zero_with_stages; });
  if (facts_.experts > 0)
    std::erase_if(stage.zeros, [&](int z) { return z > r.max_zero_with_experts; });
  // Overlapping the data-parallel communication with compute never costs time in this model, so
  // the joint search takes it where the devices can (not CPU ranks); Megatron-LM's published
  // layouts (SC'21) did not overlap.
  const bool can_overlap = machine_.device(0).overlaps_communication();
  stage.overlap = r.overlap_grad_reduce ? *r.overlap_grad_reduce : joint && can_overlap;
  std::vector<bool> sps;
  if (r.sequence_parallel)
    sps = {*r.sequence_parallel && tp > 1};
  else
    sps = joint && tp > 1 && facts_.transformer ? std::vector<bool>{false, true}
                                                : std::vector<bool>{false};
  // Megatron-LM scatters each rank's share of the sequence over its TP devices and asserts that
  // they divide it (tensor_parallel/mappings.py): a launchable plan takes sequence parallelism
  // only there.
  if (r.launchable && tp > 1 && facts_.transformer && facts_.sequence > 0 &&
      facts_.sequence % (std::int64_t{tp} * cp) != 0) {
    if (r.sequence_parallel && *r.sequence_parallel) {
      if (!r.tensor_parallel || (!r.context_parallel && cp > 1)) return;
      throw InputError(fmt::format(
          "--sequence-parallel: Megatron-LM splits each rank's {} tokens (the sequence{}) over "
          "--tp {}, which does not divide them",
          static_cast<double>(facts_.sequence) / cp,
          cp > 1 ? fmt::format(" of {} over --cp {}", facts_.sequence, cp) : std::string(), tp));
    }
    sps = {false};
  }
  // Overlapping tensor-parallel collectives with GEMMs pipelines the sequence-parallel all-gathers
  // and reduce-scatters (Megatron-Core requires --sequence-parallel for it), on devices whose SMs
  // it can share.
  const bool can_overlap_tp = tp > 1 && machine_.device(0).sm_count > kTpOverlapSms;
  if (r.tp_comm_overlap && *r.tp_comm_overlap && tp > 1 &&
      !(r.sequence_parallel && *r.sequence_parallel))
    throw InputError(
        "--tp-comm-overlap needs --sequence-parallel (the overlap pipelines the "
        "sequence-parallel all-gathers and reduce-scatters with their GEMMs)");
  // The joint search's segment plans, and in joint mode Megatron-LM's beside them.
  const std::vector<bool> segment_plans = joint && r.launchable ? std::vector<bool>{true}
                                          : joint && tp > 1     ? std::vector<bool>{false, true}
                                                                : std::vector<bool>{false};
  // Each expert-tensor-parallel degree with the expert-parallel degrees it allows.
  std::vector<std::pair<int, std::vector<int>>> expert_grids;
  for (int etp : expert_tensor_parallel_degrees(tp))
    expert_grids.emplace_back(etp, expert_parallel_degrees(tp, cp * dp, etp));
  std::vector<ContextExchange> exchanges{ContextExchange::Ring};
  if (r.context_exchange)
    exchanges = {*r.context_exchange};
  else if (joint && cp > 1)
    exchanges.push_back(ContextExchange::AllGather);
  // Transformer Engine's context parallelism takes a sliding window only when it all-gathers the
  // keys and values (context_parallel.py refuses the ring, cp_comm_type p2p): what a launcher runs.
  if (r.launchable && facts_.sliding_window && cp > 1) {
    if (r.context_exchange == ContextExchange::Ring && r.context_parallel > 1)
      throw InputError(fmt::format(
          "--cp-comm p2p: '{}' attends within a sliding window, which Transformer Engine's "
          "context parallelism takes only by all-gathering the keys and values (--cp-comm "
          "all_gather), not by a ring",
          facts_.model));
    // Searched, it is the all-gather; asked for as a ring (with CP searched), no such grid.
    if (r.context_exchange == ContextExchange::Ring)
      exchanges.clear();
    else
      exchanges = {ContextExchange::AllGather};
  }
  // And multi-head latent attention only by a ring (context_parallel.py refuses MLA with
  // cp_comm_type all_gather): with a window too, no exchange is left.
  if (r.launchable && facts_.latent_attention && cp > 1) {
    if (r.context_exchange == ContextExchange::AllGather && r.context_parallel > 1)
      throw InputError(fmt::format(
          "--cp-comm all_gather: '{}' has multi-head latent attention, which Transformer "
          "Engine's context parallelism takes only by a ring of keys and values (--cp-comm p2p)",
          facts_.model));
    std::erase(exchanges, ContextExchange::AllGather);
  }
  const bool own_alltoall = r.experts_over_copies_only;  // the launcher's own, not overlapped
  // A capacity factor pads each expert's input up to its capacity, which Megatron-Core's DeepEP
  // (flex) dispatcher does not (TransformerConfig refuses moe_pad_expert_input_to_capacity with
  // it): the search gives capped plans the all-to-all dispatcher.
  std::vector<TokenDispatcher> dispatchers{TokenDispatcher::AllToAll};
  if (r.dispatcher)
    dispatchers = {*r.dispatcher};
  else if (joint && facts_.experts > 0 && !own_alltoall && r.expert_load.dropless())
    dispatchers.push_back(TokenDispatcher::DeepEp);
  std::vector<bool> ep_overlaps{false};
  if (r.ep_comm_overlap)
    ep_overlaps = {*r.ep_comm_overlap};
  else if (joint && facts_.experts > 0 && can_overlap && !own_alltoall &&
           (facts_.half_precision || !r.launchable))
    ep_overlaps.push_back(true);
  // The order of the devices matters where links differ above the node: on a machine of pods.
  std::vector<DeviceOrder> orders{DeviceOrder::PipelineOutermost};
  if (r.device_order)
    orders = {*r.device_order};
  else if (machine_.pod_of(machine_.num_devices() - 1) > 0 && pp > 1 && dp > 1)
    orders.push_back(DeviceOrder::DataParallelOutermost);
  for (bool sp : sps) {
    std::vector<bool> tpos{false};
    if (r.tp_comm_overlap)
      tpos = {*r.tp_comm_overlap && sp && can_overlap_tp};
    else if (joint && sp && can_overlap_tp)
      tpos = {false, true};
    for (bool tpo : tpos)
      for (DeviceOrder order : orders)
        for (bool megatron : segment_plans)
          for (const auto& [etp, eps] : expert_grids) {
            // Each expert split by width is Megatron-LM's split of the segment, which the joint
            // search's own segment plans are not.
            if (etp > 1 && joint && !megatron) continue;
            for (int ep : eps)
              for (TokenDispatcher d : dispatchers)
                for (bool epo : ep_overlaps)
                  for (ContextExchange x : exchanges) {
                    if (ep == 1 && (d != dispatchers.front() || epo)) continue;
                    if (cp == 1 && x != exchanges.front()) continue;
                    // DeepEP sends a token to the devices of its experts, not to slices of them.
                    if (etp > 1 && ep > 1 && d == TokenDispatcher::DeepEp) continue;
                    stage.segments.push_back({sp, tpo, order, megatron, ep, etp, d, epo, x});
                  }
          }
  }
  const int index = static_cast<int>(stages_.size());
  const std::int64_t per_grid = static_cast<std::int64_t>(stage.recomputes.size()) *
                                static_cast<std::int64_t>(stage.zeros.size()) *
                                static_cast<std::int64_t>(stage.segments.size());
  stages_.push_back(std::move(stage));
  // Asked for with its stages, interleaving needs a micro-batch count the stages divide: one of
  // the counts tried, not each of them (unasked, the count is the planner's to choose).
  if (r.interleave > 1 && r.pipeline_stages &&
      (pp == 1 || std::ranges::none_of(ms, [&](int m) { return m % pp == 0; })))
    throw InputError(
        pp == 1 ? fmt::format("--interleave {} needs --pp > 1", r.interleave)
        : r.micro_batches
            ? fmt::format("--interleave {} needs a micro-batch count that --pp {} divides "
                          "(Megatron-LM's schedule); got --micro-batches {}",
                          r.interleave, pp, r.micro_batches)
            : fmt::format("--interleave {} needs a micro-batch count that --pp {} divides "
                          "(Megatron-LM's schedule), and each data-parallel copy has {} "
                          "sample{} to split: raise --batch or use fewer data-parallel copies",
                          r.interleave, pp, per_replica, per_replica == 1 ? "" : "s"));
  for (int m : ms) {
    std::vector<int> vs;
    if (r.interleave) {
      vs = {r.interleave};
    } else {
      for (int v = 1; v <= 8; ++v) vs.push_back(v);
    }
    for (int v : vs) {
      if (v > 1 && (pp == 1 || m % pp != 0)) continue;
      if (pp * v > facts_.segments) continue;
      // Megatron-LM gives each chunk the same number of layers, or one fewer to the chunks at the
      // ends where they do not divide (chunk_layer_ends); every chunk needs a layer.
      if ((!joint || r.launchable) && facts_.layers < pp * v) {
        if (r.pipeline_stages && r.interleave)
          throw InputError(fmt::format("--pp {} --interleave {}: {} layers do not fill {} chunks",
                                       pp, v, facts_.layers, pp * v));
        continue;
      }
      if (per_grid == 0) continue;
      grids_.push_back({index, m, v, per_replica / m, size_});
      size_ += per_grid;
    }
  }
}

// The expert tensor parallelism a replica of tp devices can take: 1, and tp (each expert's FFN
// split as a dense MLP's) where the model has experts, searched in joint mode and asked for in
// expert mode (--etp). Megatron-Core takes any ETP with ETP x EP x EDP = TP x CP x DP; Unity plans
// these two, the ones torchtitan also runs.
std::vector<int> LayoutSpace::expert_tensor_parallel_degrees(int tp) const {
  const int asked = request_.expert_tensor_parallel;
  if (facts_.experts == 0) {
    if (asked > 1)
      throw InputError(
          fmt::format("--etp {}: '{}' has no mixture-of-experts layers", asked, facts_.model));
    return {1};
  }
  if (asked > 1 && request_.experts_over_copies_only)
    throw InputError(fmt::format(
        "--etp {}: --launcher {} spreads whole experts over data-parallel copies (etp 1)", asked,
        request_.launcher));
  if (asked) {
    if (asked == 1 || asked == tp) return {asked};
    if (request_.tensor_parallel)
      throw InputError(fmt::format(
          "--etp {}: Unity plans expert tensor parallelism of 1 or --tp ({}): each expert split "
          "by expert over the tensor-parallel devices, or by its FFN width as a dense MLP is",
          asked, tp));
    return {};  // a grid of another tp
  }
  if (facts_.joint && tp > 1 && !request_.experts_over_copies_only) return {1, tp};
  return {1};
}

// The expert-parallel degrees a layout of tp x dp devices per pipeline rank can take (dp: the
// copies, context-parallel ranks included). With etp 1: 1 (the replica's own split), and multiples
// of tp that divide tp x dp and the experts (Megatron-Core folds EP into the tensor-, context- and
// data-parallel ranks: tp x cp x dp = ep x edp with ETP 1). With etp = tp, each replica holds
// every expert's slice: 1, and degrees that divide the copies and the experts (tp x cp x dp = etp
// x ep x edp).
std::vector<int> LayoutSpace::expert_parallel_degrees(int tp, int dp, int etp) const {
  const int asked = request_.expert_parallel;
  const std::int64_t experts = facts_.experts;
  if (experts == 0) {
    if (asked > 1)
      throw InputError(
          fmt::format("--ep {}: '{}' has no mixture-of-experts layers", asked, facts_.model));
    return {1};
  }
  auto fits = [&](int ep) {
    if (etp > 1) return ep == 1 || (dp % ep == 0 && experts % ep == 0);
    return ep == 1 || (ep % tp == 0 && (tp * dp) % ep == 0 && experts % ep == 0);
  };
  if (asked) {
    // Whatever the grid, the experts must split evenly.
    if (asked > 1 && experts % asked != 0)
      throw InputError(
          fmt::format("--ep {}: the {} experts of each mixture-of-experts layer of "
                      "'{}' do not split evenly over {} devices",
                      asked, experts, facts_.model, asked));
    if (!fits(asked)) {
      if (request_.tensor_parallel && request_.pipeline_stages && etp > 1)
        throw InputError(fmt::format(
            "--ep {} --etp {}: with each expert split by width over the tensor-parallel devices, "
            "expert parallelism spreads the {} experts over data-parallel copies: a degree that "
            "divides the {} copies of a pipeline stage (cp x dp) and the experts",
            asked, etp, experts, dp));
      if (request_.tensor_parallel && request_.pipeline_stages)
        throw InputError(fmt::format(
            "--ep {}: expert parallelism spreads the {} experts over a multiple of --tp {} that "
            "divides the {} devices of a pipeline stage (tp x dp) and the experts",
            asked, experts, tp, tp * dp));
      return {};
    }
    return {asked};
  }
  std::vector<int> out{1};
  for (int ep = etp > 1 ? 2 : tp; ep <= tp * dp; ep *= 2)
    if (ep > 1 && fits(ep)) out.push_back(ep);
  return out;
}

std::int64_t LayoutSpace::count(const LayoutGrid& g) const {
  const StageChoices& s = stages_[static_cast<std::size_t>(g.stage)];
  return static_cast<std::int64_t>(s.recomputes.size() * s.zeros.size() * s.segments.size());
}

bool LayoutSpace::takes(const Layout& l) const {
  return !request_.launchable || !l.ep_overlap ||
         alltoall_overlap_taken({l.ep, l.pp, l.v, l.recompute, facts_.half_precision});
}

Layout LayoutSpace::layout(const LayoutGrid& g, std::int64_t i) const {
  const StageChoices& s = stages_[static_cast<std::size_t>(g.stage)];
  const auto segments = static_cast<std::int64_t>(s.segments.size());
  const auto zeros = static_cast<std::int64_t>(s.zeros.size());
  const SegmentOptions& o = s.segments[static_cast<std::size_t>(i % segments)];
  Layout l;
  l.tp = s.tp;
  l.pp = s.pp;
  l.dp = s.dp;
  l.m = g.m;
  l.v = g.v;
  l.b = g.b;
  l.set_recompute(s.recomputes[static_cast<std::size_t>(i / segments / zeros)]);
  l.zero = s.zeros[static_cast<std::size_t>(i / segments % zeros)];
  l.sp = o.sp;
  l.overlap = s.overlap;
  l.tp_overlap = o.tp_overlap;
  l.order = o.order;
  l.megatron_segments = o.megatron_segments;
  l.ep = o.ep;
  l.etp = o.etp;
  l.dispatcher = o.dispatcher;
  l.ep_overlap = o.ep_overlap;
  l.cp = s.cp;
  l.cp_exchange = o.cp_exchange;
  return l;
}

}  // namespace unity::pipeline_layouts
