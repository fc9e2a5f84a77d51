#pragma once
// Attributes an operator may leave out, with the value that means. Patterns compare against these,
// and substitutions drop attributes that equal them, so a rewritten node hashes like a hand-built
// one.
#include <optional>
#include <string>

#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity::detail {

inline std::optional<AttrValue> attribute_default(const std::string& name) {
  if (name == "activation") return AttrValue{std::string("none")};
  if (name == "groups" || name == "pieces") return AttrValue{std::int64_t{1}};
  if (name == "keepdims") return AttrValue{std::int64_t{1}};
  if (name == "normalized_dims") return AttrValue{std::int64_t{1}};
  // Experts: SwiGLU experts unless "gelu".
  if (name == "mlp") return AttrValue{std::string("swiglu")};
  // Rotary embeddings' base (Llama 2's; Llama 3 trains with 500000).
  if (name == "rotary_base") return AttrValue{10000.0};
  // MultiHeadAttention's rotary embeddings and causal mask, LayerNorm's RMS form: off unless set.
  // fused: the scores through memory unless a rule fused the kernel.
  // fp8: the operator's GEMMs in bf16 unless the model trains in fp8 (set_fp8_gemms).
  // vocab_parallel: a cross-entropy reads every class on one device unless a rule split them.
  if (name == "rotary" || name == "causal" || name == "rms" || name == "fused" || name == "fp8" ||
      name == "vocab_parallel")
    return AttrValue{std::int64_t{0}};
  return std::nullopt;
}

// Attributes that change which inputs an operator's tasks read (Concat's pieces, a cross-entropy's
// split classes): a pattern that leaves one out matches only its default, so a rule written
// without it never rewrites such a node.
inline bool pattern_must_name(const std::string& name) {
  return name == "pieces" || name == "vocab_parallel";
}

// An attention's head_dim defaults to its embedding size (the query's last dim) over num_heads,
// where that divides: a default that depends on the operator's input, not only on the name.
inline std::optional<AttrValue> attribute_default(const Operator& op, const std::string& name,
                                                  const ParallelTensorShape* query) {
  if (op.type == OpType::MultiHeadAttention && name == "head_dim") {
    const auto heads = op.attrs.items().find("num_heads");
    if (!query || query->rank() != 3 || heads == op.attrs.items().end()) return std::nullopt;
    const auto* h = std::get_if<std::int64_t>(&heads->second);
    const std::int64_t e = query->dims[2].size;
    if (!h || *h <= 0 || e % *h != 0) return std::nullopt;
    return AttrValue{e / *h};
  }
  return attribute_default(name);
}

// `query`: the operator's first input, where an attribute's default depends on it (head_dim).
inline void drop_default_attributes(Operator& op, const ParallelTensorShape* query = nullptr) {
  std::vector<std::string> defaults;
  for (const auto& [key, value] : op.attrs.items())
    if (auto d = attribute_default(op, key, query); d && *d == value) defaults.push_back(key);
  // An attention's num_kv_heads defaults to its num_heads (no grouped-query attention).
  if (op.type == OpType::MultiHeadAttention && op.attrs.has("num_kv_heads") &&
      op.attrs.has("num_heads") &&
      op.attrs.items().at("num_kv_heads") == op.attrs.items().at("num_heads"))
    defaults.push_back("num_kv_heads");
  for (const auto& key : defaults) op.attrs.erase(key);
}

}  // namespace unity::detail
