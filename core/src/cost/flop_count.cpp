#include "unity/core/cost/flop_count.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(FlopCount count) {
  return count == FlopCount::Causal ? "causal" : "full";
}

FlopCount flop_count_from_string(std::string_view name) {
  for (auto c : {FlopCount::Full, FlopCount::Causal})
    if (to_string(c) == name) return c;
  throw InputError(fmt::format("unknown FLOP count '{}' (expected full or causal)", name));
}

std::string_view flop_count_description(FlopCount count) {
  return count == FlopCount::Causal
             ? "causal attention at half, as Megatron-Core counts from 0.12"
             : "causal attention in full, as Megatron-LM counted before Megatron-Core 0.12";
}

bool has_causal_attention(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if ((n.op.type == OpType::MultiHeadAttention || n.op.type == OpType::LatentAttention) &&
        n.op.attrs.get_int("causal", 0) != 0)
      return true;
  return false;
}

}  // namespace unity
