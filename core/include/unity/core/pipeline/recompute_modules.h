#pragma once
// What selective recomputation runs again, by module, as Megatron-Core names them
// (`--recompute-granularity selective --recompute-modules ...`): the attention's scores
// (core_attn, its default and Unity's `--recompute selective`), the normalisations' outputs
// (layernorm), the experts' activation function (moe_act) and the whole mixture-of-experts layer
// (moe). Each recomputes its part's forward in the backward pass instead of keeping what the part
// made: core_attn its scores and probabilities, layernorm and moe_act their outputs
// (output-discarding), moe everything inside the layer but its input, its all-to-alls included.
#include <string>
#include <string_view>

namespace unity {

struct RecomputeModules {
  static constexpr unsigned kCoreAttention = 1, kLayerNorm = 2, kMoeActivation = 4, kMoe = 8;
  unsigned bits = kCoreAttention;

  bool has(unsigned module) const { return (bits & module) != 0; }
  bool is_default() const { return bits == kCoreAttention; }
  bool operator==(const RecomputeModules&) const = default;
};

// "core_attn,layernorm": Megatron-Core's names, in its order, comma-separated.
std::string to_string(RecomputeModules modules);
// Parses "layernorm,moe_act" (commas or spaces); throws InputError naming an unknown module and
// listing the known ones, or on an empty list.
RecomputeModules recompute_modules_from_string(std::string_view names);

// The module sets Megatron-Core's mixture-of-experts recipes recompute (its model zoo's Qwen3 and
// DeepSeek-V3): layernorm,moe_act and layernorm,moe. The joint search weighs them for a model with
// experts, and the explorer offers them as pins.
inline constexpr RecomputeModules kMoeRecipeRecomputeModules[] = {
    {RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation},
    {RecomputeModules::kLayerNorm | RecomputeModules::kMoe}};

}  // namespace unity
