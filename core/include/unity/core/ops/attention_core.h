#pragma once
// The attention operators (MultiHeadAttention, LatentAttention) seen through what they share: a
// core of scores q.k and context p.v over some heads, between projections. The cost model, the
// pipeline planner (transformer layers, sequence parallelism, selective recomputation, the memory
// kept for the backward pass) and the expert strategies ask these instead of naming one operator.
#include "unity/core/pcg/graph.h"
#include "unity/core/pcg/op_type.h"

namespace unity {

inline bool is_attention(OpType t) {
  return t == OpType::MultiHeadAttention || t == OpType::LatentAttention;
}

// Whether the graph has an attention operator.
bool has_attention(const Graph& g);

// One task of an attention operator (its share of the samples and of the heads).
struct AttentionTask {
  double batch = 0;             // samples
  double sq = 0, sk = 0;        // query and key positions
  double heads = 0;             // query heads
  double qk_dim = 0;            // a head's width in the scores q.k
  double v_dim = 0;             // a head's width in the context p.v
  double projection_flops = 0;  // forward FLOPs of its projections (the GEMMs around the core)
  // Elements it keeps for the backward pass besides its output and the scores: the projections'
  // results (q, k, v and the context; and a latent attention's compressed latents and their
  // normalised copies).
  double kept_elements = 0;
  // The keys and values its core reads over its own positions: what context parallelism
  // exchanges (grouped key/value heads for MultiHeadAttention; every head's decompressed keys and
  // values for LatentAttention, as Megatron-Core's MLA exchanges them).
  double kv_elements = 0;
  // The planner's context-parallel shard (its "context_parallel" attribute): the queries attend
  // to the keys of this many shards of sk positions each.
  double context_parallel = 1;

  double keys() const { return sk * context_parallel; }
  // Forward FLOPs of the two batched products, the scores and the context, unmasked.
  double core_flops() const { return 2.0 * batch * heads * sq * keys() * (qk_dim + v_dim); }
};

AttentionTask attention_task(const Graph& g, const Node& n);

}  // namespace unity
