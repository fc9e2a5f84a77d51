#pragma once
// Serial reference kernels on whole logical tensors. The parallel evaluator calls them per replica
// and per micro-batch; the partial-sum variants take the block of the reduction dimension a replica
// owns.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/op_type.h"
#include "unity/core/pcg/operator.h"
#include "unity/rules/dense_tensor.h"

namespace unity::rules::kernels {

using Range = std::pair<std::int64_t, std::int64_t>;  // [begin, end)

double activation(const std::string& name, double x);
// An operator's AxisFunction on every slice along `axis`.
DenseTensor map_along_axis(const AxisFunction& f, const DenseTensor& x, int axis,
                           const std::vector<double>& params);
// A point-wise operator or Dropout, element by element.
DenseTensor map_unary(const Operator& op, const DenseTensor& x);
// Numpy broadcasting.
DenseTensor binary(OpType op, const DenseTensor& a, const DenseTensor& b);

// a [..., m, k] x b [k, n] (shared) or [..., k, n] (batched), summing k over `k_range` only.
DenseTensor matmul(const DenseTensor& a, const DenseTensor& b, Range k_range);

// Convolution and pooling windows over the spatial dims of x [N, C, spatial...] (1 to 3 of them):
// one entry per spatial dim.
struct Conv2DParams {
  std::vector<std::int64_t> stride, pad, dil;
  std::int64_t groups = 1;
};
// Sums input channels in `c_range` only (groups == 1); a grouped convolution takes every channel.
DenseTensor conv2d(const DenseTensor& x, const DenseTensor& w, const Conv2DParams& p,
                   Range c_range);

// ConvTranspose: x [N, C, spatial...], w [C, O/groups, k...]; `out_pad` entries per spatial dim.
// Sums input channels in `c_range` only (groups == 1).
DenseTensor conv_transpose(const DenseTensor& x, const DenseTensor& w, const Conv2DParams& p,
                           const std::vector<std::int64_t>& out_pad, Range c_range);

struct Pool2DParams {
  bool max = true;
  // `pad` before each spatial dim, `pad_end` after it (empty: as `pad`); taps `dil` apart.
  std::vector<std::int64_t> kernel, stride, pad, pad_end, dil;
};
DenseTensor pool2d(const DenseTensor& x, const Pool2DParams& p);

// Statistics per channel over each of `sample_blocks` equal blocks of the batch and the spatial
// dims (what each sample partition computes on its own: data parallelism without SyncBN).
DenseTensor batch_norm(const DenseTensor& x, const DenseTensor& scale, const DenseTensor& bias,
                       double epsilon, int sample_blocks);
// Normalises the trailing `dims` dims; gamma and beta optional (empty tensors).
DenseTensor layer_norm(const DenseTensor& x, int dims, const DenseTensor* gamma,
                       const DenseTensor* beta, double epsilon);

// Multi-head attention restricted to the heads in `heads` (their contribution to the output
// projection, a partial sum over head blocks). Each head is `head_dim` wide: w_q, w_k, w_v
// [E, num_heads x head_dim], w_o [num_heads x head_dim, E].
DenseTensor attention(const std::vector<const DenseTensor*>& in, std::int64_t num_heads,
                      std::int64_t head_dim, Range heads);

// Looks up rows in `rows` only (other indices contribute zeros: a row-sharded table's partial sum).
DenseTensor embedding(const DenseTensor& indices, const DenseTensor& table, Range rows);
DenseTensor embedding_bag(const DenseTensor& indices, const DenseTensor& table, bool mean,
                          Range rows);

DenseTensor softmax(const DenseTensor& x, int axis);
// Sums (or averages, dividing by the whole count) the reduced axes over the given block of each.
DenseTensor reduce(const DenseTensor& x, const std::vector<int>& axes,
                   const std::vector<Range>& blocks, bool keepdims, bool mean);
DenseTensor softmax_cross_entropy(const DenseTensor& logits, const DenseTensor& labels);
DenseTensor mse_loss(const DenseTensor& prediction, const DenseTensor& target);

std::vector<DenseTensor> split(const DenseTensor& x, int axis,
                               const std::vector<std::int64_t>& sizes);
DenseTensor reshape(const DenseTensor& x, const std::vector<std::int64_t>& sizes);

}  // namespace unity::rules::kernels
