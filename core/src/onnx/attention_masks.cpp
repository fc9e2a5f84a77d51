#include "onnx/attention_masks.h"

#include <cmath>

#include "onnx/folding_kernels.h"

namespace unity::onnxio {

bool is_causal_additive_mask(const ConstTensor& mask) {
  const std::size_t rank = mask.dims.size();
  if (rank < 2 || mask.is_integer()) return false;
  if (mask.dims[rank - 1] != mask.dims[rank - 2]) return false;
  bool causal = true;
  folding::for_each_index(mask.dims, [&](const std::vector<std::int64_t>& index, std::int64_t at) {
    const double v = mask.floats[static_cast<std::size_t>(at)];
    const bool future = index[rank - 1] > index[rank - 2];  // column after row
    causal = causal && (future ? v <= kMaskedScore : v == 0.0);
  });
  return causal;
}

std::optional<ConstTensor> additive_mask(const ConstTensor& condition, double fill,
                                         bool fill_when_true) {
  if (!(fill <= kMaskedScore)) return std::nullopt;
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(condition.numel()));
  for (std::int64_t i = 0; i < condition.numel(); ++i) {
    const bool selected = (condition.as_double(i) != 0.0) == fill_when_true;
    values.push_back(selected ? fill : 0.0);
  }
  return ConstTensor::from_doubles(std::move(values), condition.dims);
}

}  // namespace unity::onnxio
