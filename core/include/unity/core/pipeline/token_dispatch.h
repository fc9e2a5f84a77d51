#pragma once
// How a mixture-of-experts layer's tokens reach the devices of their experts under expert
// parallelism, and the bytes each device sends each other device in one dispatch (the combine
// sends the same back). Routing is taken as uniform: each token picks top_k distinct experts of
// E, so a set of m experts receives it with probability 1 - C(E - m, k) / C(E, k).
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

struct DispatchGroup {
  std::int64_t experts = 0, top_k = 0;
  int devices = 1;           // ep
  int devices_per_node = 1;  // of the group, in one node
};
// Bytes one device sends one other device in a dispatch of `message` bytes of tokens (its tokens
// x hidden x element size), same node or not.
double dispatch_bytes(TokenDispatcher d, const DispatchGroup& g, double message, bool same_node);

// One dispatch (or combine) in which every device of `group` sends its tokens (`message` bytes)
// to the devices of their `top_k` of `experts` (spread evenly over the group): the seconds it
// takes as simultaneous transfers (CostModel::transfers_time: each device receives over its
// links, one source after another) and the bytes all devices send.
struct DispatchCost {
  double seconds = 0;
  double bytes = 0;
  double inter_node_bytes = 0;  // of bytes, those sent to a device of another node
};
DispatchCost dispatch_cost(TokenDispatcher d, std::int64_t experts, std::int64_t top_k,
                           const std::vector<int>& group, double message, const CostModel& costs);

}  // namespace unity
