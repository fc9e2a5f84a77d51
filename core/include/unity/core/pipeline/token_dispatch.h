#pragma once
// How a mixture-of-experts layer's tokens reach the devices of their experts under expert
// parallelism, and the bytes each device sends each other device in one dispatch (the combine
// sends the same back). Routing is taken as uniform: each token picks top_k distinct experts of
// E, so a set of m experts receives it with probability 1 - C(E - m, k) / C(E, k). A router
// may limit a token to some groups of experts (DeepSeek's node-limited routing, Megatron-Core's
// --moe-router-num-groups and --moe-router-group-topk): it keeps the group_top_k groups whose
// best top_k / group_top_k scores are highest and picks that many experts in each. A node that
// holds one of 8 groups, 4 kept, then receives a token half the time (DeepSeek-V3 on 8 nodes),
// against 1 - C(224, 8) / C(256, 8) = 0.66 of the time unlimited.
// - Megatron-Core's all-to-all dispatcher (MoEAlltoAllTokenDispatcher) sends a copy of the token
//   for every expert it picked: k copies spread evenly over the ep devices.
// - DeepEP (DeepSeek's kernels, Megatron-Core's flex dispatcher) sends a token once to each node
//   that holds one of its experts, over the fabric to one GPU there, which forwards it over NVLink
//   to each device holding one; inside the sender's node, once to each such device.
#include <cstdint>
#include <string_view>
#include <vector>

namespace unity {

class CostModel;

enum class TokenDispatcher { AllToAll, DeepEp };
std::string_view to_string(TokenDispatcher d);
TokenDispatcher token_dispatcher_from_string(std::string_view name);  // throws InputError

// The probability that a token's top_k of `experts` picks at least one of a set of `held`.
double routed_probability(std::int64_t experts, std::int64_t top_k, std::int64_t held);

// How a mixture-of-experts layer routes: top_k of its experts, in contiguous groups of which a
// token may use only group_top_k (groups 0 or 1, or group_top_k 0 or >= groups: no limit).
struct ExpertRouting {
  std::int64_t experts = 0, top_k = 0;
  std::int64_t groups = 0, group_top_k = 0;
  bool limited() const;
};

// The probability that a token reaches a block of `held` experts that starts where a group
// starts (expert parallelism deals the experts out in contiguous blocks): routed_probability
// without a group limit; with one, the chance that j of the groups the block covers are among
// the token's group_top_k (hypergeometric), times the chance that its top_k / group_top_k picks
// in each of those hit the block's part of it.
double routed_probability(const ExpertRouting& r, std::int64_t held);

struct DispatchGroup {
  ExpertRouting routing;
  int devices = 1;           // ep
  int devices_per_node = 1;  // of the group, in one node
};
// Bytes one device sends one other device in a dispatch of `message` bytes of tokens (its tokens
// x hidden x element size), same node or not.
double dispatch_bytes(TokenDispatcher d, const DispatchGroup& g, double message, bool same_node);

// One dispatch (or combine) in which every device of `group` sends its tokens (`message` bytes)
// to the devices of the experts `routing` picks for them (spread evenly over the group): the
// seconds it takes as simultaneous transfers (CostModel::transfers_time: each device receives over
// its links, one source after another) and the bytes all devices send.
struct DispatchCost {
  double seconds = 0;
  double bytes = 0;
  double inter_node_bytes = 0;  // of bytes, those sent to a device of another node
};
DispatchCost dispatch_cost(TokenDispatcher d, const ExpertRouting& routing,
                           const std::vector<int>& group, double message, const CostModel& costs);

}  // namespace unity
