#pragma once
// Internal kernels of constant folding (constant_folding.cpp dispatches to them): index
// arithmetic on row-major tensors, element-wise maths with numpy broadcasting, and the layout
// operators. Each throws InputError naming the node for malformed input.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "onnx/const_tensor.h"
#include "onnx/onnx_model_reader.h"

namespace unity::onnxio::folding {

using Index = std::vector<std::int64_t>;

[[noreturn]] void fail(const ::onnx::NodeProto& node, const std::string& what);

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& dims);
// Flat index into a tensor of `dims` (right-aligned, size-1 dims broadcast) of the element at
// multi-index `index` of the broadcast result.
std::int64_t broadcast_index(const Index& index, const std::vector<std::int64_t>& dims);
// Calls f(multi_index, flat) for every element of a tensor of `dims`, in row-major order.
void for_each_index(const std::vector<std::int64_t>& dims,
                    const std::function<void(const Index&, std::int64_t)>& f);
ConstTensor empty_like(int elem_type, std::vector<std::int64_t> dims);
// Appends element `index` of src to dst (same element kind).
void copy_element(const ConstTensor& src, std::int64_t index, ConstTensor& dst);
// A tensor of `dims` whose element at each multi-index is src[source_index(index)].
ConstTensor gather_elements(const ConstTensor& src, std::vector<std::int64_t> dims,
                            const std::function<std::int64_t(const Index&)>& source_index);

bool is_unary_op(std::string_view op_type);
ConstTensor fold_unary(const ::onnx::NodeProto& node, const ConstTensor& x);
ConstTensor fold_binary(const ::onnx::NodeProto& node, const ConstTensor& a, const ConstTensor& b);
ConstTensor fold_where(const ConstTensor& condition, const ConstTensor& x, const ConstTensor& y);
ConstTensor fold_cast(const ConstTensor& x, int to);
// HannWindow, HammingWindow, BlackmanWindow of `size` points (a signal's window before its DFT):
// periodic (the default) over size points, else symmetric over size - 1, in output_datatype.
ConstTensor fold_window(const ::onnx::NodeProto& node,
                        double size);  // to: an onnx::TensorProto_DataType
// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters with peak 1, their edges
// spaced evenly on the mel scale mel(f) = 2595 log10(1 + f / 700) over [lower, upper] hertz and
// rounded down to DFT bins, as ONNX defines them; in output_datatype.
ConstTensor fold_mel_weight_matrix(const ::onnx::NodeProto& node, std::int64_t mel_bins,
                                   std::int64_t dft_length, double sample_rate, double lower_hz,
                                   double upper_hz);
// Trilu: keeps the elements on and above (upper) or on and below (!upper) diagonal k of the last
// two dims, zeroes the rest (how exporters write torch.triu/tril, e.g. of a causal mask).
ConstTensor fold_trilu(const ::onnx::NodeProto& node, const ConstTensor& x, std::int64_t k,
                       bool upper);
// ScatterND without reduction: data with the slices that `indices` name replaced by `updates`.
ConstTensor fold_scatter_nd(const ::onnx::NodeProto& node, const ConstTensor& data,
                            const ConstTensor& indices, const ConstTensor& updates);

ConstTensor fold_gather(const ::onnx::NodeProto& node, const ConstTensor& data,
                        const ConstTensor& indices);
ConstTensor fold_concat(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in);
ConstTensor fold_slice(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
                       std::int64_t opset);
ConstTensor fold_transpose(const ::onnx::NodeProto& node, const ConstTensor& x);

}  // namespace unity::onnxio::folding
