#pragma once
// How context parallelism's ranks share keys and values. Context parallelism splits each sequence
// over cp devices (into 2 x cp chunks, rank i holding chunks i and 2cp - 1 - i, so that every rank
// does the same share of a causal attention's work); every other operator is token-wise and runs
// on the rank's own tokens, while each query must attend to the keys and values of the whole
// sequence. Two ways of getting them, both in use:
// - Ring ("p2p", Megatron-Core's default): cp - 1 steps, each rank sending the key/value block it
//   holds to the next rank while it attends to the block it received, so the sends hide behind
//   the attention's products as long as a block's products take longer than its send. The
//   backward pass sends the blocks again with their gradients' partial sums.
// - All-gather ("all_gather", Llama 3): the keys and values are gathered before the attention and
//   their gradients reduce-scattered after its backward, exposed (with grouped-query attention
//   they are a small share of the attention's traffic); the gathered sequence is held meanwhile.
#include <string_view>
#include <vector>

namespace unity {

class CostModel;

enum class ContextExchange { Ring, AllGather };
std::string_view to_string(ContextExchange e);  // "p2p", "all_gather" (Megatron's --cp-comm-type)
ContextExchange context_exchange_from_string(std::string_view name);  // throws InputError

// One attention's exchange in one micro-batch. `groups`: the devices of each set of context ranks
// that exchange together (one set per tensor-parallel rank), in ring order, all exchanging at
// once. `kv_bytes`: the keys and values of the whole sequence for one device's heads.
// `products_forward` / `products_backward`: seconds one device's attention products take in each
// pass (against the whole sequence's keys), which the ring's steps hide behind.
struct ContextExchangeCost {
  double forward = 0, backward = 0;  // seconds exposed in each pass
  double bytes = 0;                  // all devices of all groups send
  double workspace = 0;              // bytes a device holds for it during the attention
};
ContextExchangeCost context_exchange_cost(ContextExchange e,
                                          const std::vector<std::vector<int>>& groups,
                                          double kv_bytes, double products_forward,
                                          double products_backward, const CostModel& costs);

}  // namespace unity
