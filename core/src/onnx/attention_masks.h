#pragma once
// Attention masks known at import time. Exporters write GPT's causal mask as a masked fill,
// Where(mask, -inf, scores), or as the Add of a float mask (0 where a position may be attended,
// -inf where it may not) built by Trilu/Where over constants. The importer turns both into the Add
// of an additive mask and remembers which of those masks are causal, so that attention_fusion.cpp
// can replace the whole attention with one MultiHeadAttention with causal = 1.
#include <optional>

#include "onnx/const_tensor.h"

namespace unity::onnxio {

// A fill value at or below this hides a position from softmax as well as -inf does in practice
// (exporters use -inf, -1e9, -1e4 or the float minimum).
inline constexpr double kMaskedScore = -1e4;

// True when `mask` (rank >= 2, any leading dims) is an additive causal mask over its last two dims
// [t, t]: 0 on and below the diagonal, <= kMaskedScore above it.
bool is_causal_additive_mask(const ConstTensor& mask);

// The additive mask equivalent to Where(condition, fill, x) (`fill_when_true`) or
// Where(condition, x, fill): fill where the fill is selected, 0 elsewhere, shaped like the
// condition. Nullopt when the fill is not a masking value (> kMaskedScore).
std::optional<ConstTensor> additive_mask(const ConstTensor& condition, double fill,
                                         bool fill_when_true);

}  // namespace unity::onnxio
