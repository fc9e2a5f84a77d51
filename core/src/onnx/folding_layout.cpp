// Layout operators on constants: Gather, Concat, Slice, Transpose (see folding_kernels.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "onnx/constant_folding.h"
#include "onnx/folding_kernels.h"

namespace unity::onnxio::folding {

ConstTensor fold_gather(const ::onnx::NodeProto& node, const ConstTensor& data,
                        const ConstTensor& indices) {
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  const auto data_strides = strides_of(data.dims);
  const auto index_rank = indices.dims.size();
  const auto index_strides = strides_of(indices.dims);
  return gather_elements(data, dims, [&](const std::vector<std::int64_t>& out_index) {
    std::int64_t which = 0;
    for (std::size_t d = 0; d < index_rank; ++d)
      which += out_index[static_cast<std::size_t>(axis) + d] * index_strides[d];
    std::int64_t pos = indices.as_int(which);
    const std::int64_t extent = data.dims[static_cast<std::size_t>(axis)];
    if (pos < 0) pos += extent;
    if (pos < 0 || pos >= extent)
      fail(node, fmt::format("index {} out of range for a dim of size {}", pos, extent));
    std::int64_t flat = pos * data_strides[static_cast<std::size_t>(axis)];
    for (int d = 0; d < axis; ++d)
      flat += out_index[static_cast<std::size_t>(d)] * data_strides[static_cast<std::size_t>(d)];
    for (std::int64_t d = axis + 1; d < rank; ++d) {
      flat += out_index[static_cast<std::size_t>(d - 1) + index_rank] *
              data_strides[static_cast<std::size_t>(d)];
    }
    return flat;
  });
}

ConstTensor fold_concat(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in) {
  const auto rank = static_cast<std::int64_t>(in.front()->dims.size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  std::vector<std::int64_t> dims = in.front()->dims;
  dims[static_cast<std::size_t>(axis)] = 0;
  for (const auto* t : in)
    dims[static_cast<std::size_t>(axis)] += t->dims.at(static_cast<std::size_t>(axis));
  ConstTensor out = empty_like(in.front()->elem_type, dims);
  for_each_index(dims, [&](const std::vector<std::int64_t>& index, std::int64_t) {
    std::int64_t pos = index[static_cast<std::size_t>(axis)];
    for (const auto* t : in) {
      const std::int64_t extent = t->dims[static_cast<std::size_t>(axis)];
      if (pos < extent) {
        auto local = index;
        local[static_cast<std::size_t>(axis)] = pos;
        copy_element(*t, broadcast_index(local, t->dims), out);
        return;
      }
      pos -= extent;
    }
  });
  return out;
}

ConstTensor fold_slice(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
                       std::int64_t opset) {
  const ConstTensor& data = *in[0];
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = attr_ints(node, "starts").value_or(std::vector<std::int64_t>{});
    ends = attr_ints(node, "ends").value_or(std::vector<std::int64_t>{});
    axes = attr_ints(node, "axes").value_or(std::vector<std::int64_t>{});
  } else {
    starts = in.at(1)->to_ints();
    ends = in.at(2)->to_ints();
    if (in.size() > 3 && in[3]) axes = in[3]->to_ints();
    if (in.size() > 4 && in[4]) steps = in[4]->to_ints();
  }
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<std::int64_t> begin(data.dims.size(), 0), step(data.dims.size(), 1), dims = data.dims;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
    const std::int64_t extent = data.dims[a];
    if (steps[i] == 0) fail(node, "slice step 0");
    auto clamp = [&](std::int64_t v, bool is_end) {
      if (v < 0) v += extent;
      if (steps[i] > 0) return std::clamp<std::int64_t>(v, 0, extent);
      // Negative steps walk down from start (at most the last element) to end (exclusive, -1 is
      // one before the first element).
      return std::clamp<std::int64_t>(v, is_end ? -1 : 0, extent - 1);
    };
    const std::int64_t s = clamp(starts[i], false), e = clamp(ends[i], true);
    begin[a] = s;
    step[a] = steps[i];
    const std::int64_t span = steps[i] > 0 ? e - s : s - e;
    const std::int64_t magnitude = std::abs(steps[i]);
    dims[a] = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  }
  const auto data_strides = strides_of(data.dims);
  return gather_elements(data, dims, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < index.size(); ++d)
      flat += (begin[d] + index[d] * step[d]) * data_strides[d];
    return flat;
  });
}

ConstTensor fold_transpose(const ::onnx::NodeProto& node, const ConstTensor& x) {
  std::vector<std::int64_t> perm = attr_ints(node, "perm").value_or(std::vector<std::int64_t>{});
  if (perm.empty())
    for (auto d = static_cast<std::int64_t>(x.dims.size()) - 1; d >= 0; --d) perm.push_back(d);
  std::vector<std::int64_t> dims;
  for (auto p : perm) dims.push_back(x.dims.at(static_cast<std::size_t>(p)));
  const auto strides = strides_of(x.dims);
  return gather_elements(x, dims, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < index.size(); ++d)
      flat += index[d] * strides[static_cast<std::size_t>(perm[d])];
    return flat;
  });
}

}  // namespace unity::onnxio::folding
