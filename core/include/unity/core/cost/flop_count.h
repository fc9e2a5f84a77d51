#pragma once
// How a throughput in TFLOP/s counts a causal attention's products, which is how training
// frameworks differ when they report one. The count decides the figure a plan is compared with,
// never the time it is predicted to take.
//
// - Full: every score of the s x s matrix, the causal mask's masked half included. Megatron-LM's
//   formula through Megatron-Core 0.11 (Narayanan et al., SC'21, appendix; core_r0.8.0's
//   num_floating_point_operations counts seq_length / hidden_size), PaLM's MFU, torchtitan's
//   ("we follow the convention and do not account for sparsity in causal attention"), and the
//   FP8 Llama 3 table NeMo's performance scripts produced (its tokens/s and TFLOP/s agree with it).
// - Causal: the unmasked half only. Megatron-LM's formula from Megatron-Core 0.12 on (its
//   seq_length / hidden_size / 2: "only half of the attention matrix is non-zero"), which the
//   Megatron-MoE model zoo's Qwen3 runs report (their step time and TFLOP/s agree with it), and
//   FlashAttention's benchmarks.
#include <string_view>

#include "unity/core/pcg/graph.h"

namespace unity {

enum class FlopCount { Full, Causal };

std::string_view to_string(FlopCount count);               // "full", "causal"
FlopCount flop_count_from_string(std::string_view name);   // throws InputError
std::string_view flop_count_description(FlopCount count);  // for reports: whose count it is
// Whether the graph has a causal attention (MultiHeadAttention or LatentAttention with causal =
// 1): only then do the two counts differ, and a report need say which it used.
bool has_causal_attention(const Graph& g);

}  // namespace unity
