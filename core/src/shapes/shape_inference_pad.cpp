// Pad, GatherND, ScatterND. Pad: a dim with pads at either end is whole (degree 1: no halos),
// every other dim keeps its degree; the replica passes (partial sums stay partial only when the pad
// is linear, which the executor checks). GatherND and ScatterND read their indexed dims whole and
// any index tuple may point anywhere: only GatherND's batch dims (the leading `batch_dims`, one
// per task alike on data, indices and the output) may be split; every other dim has degree 1.
#include "shape_rules.h"
#include "unity/core/ops/pad_kernels.h"

namespace unity::shape_rules {
namespace {

Shapes infer_pad(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const std::vector<std::int64_t> pads = op.attrs.get_ints("pads");
  if (static_cast<int>(pads.size()) != 2 * x.rank())
    fail("attribute 'pads' has {} values, expected 2 x rank = {} (all begins, then all ends)",
         pads.size(), 2 * x.rank());
  pad_kernels::PadMode mode;
  const std::string mode_name = op.attrs.get_string("mode", "constant");
  if (!pad_kernels::pad_mode_of(mode_name, mode))
    fail("attribute 'mode' must be \"constant\", \"reflect\" or \"edge\", got \"{}\"", mode_name);
  ParallelTensorShape y = x;
  for (int d = 0; d < x.rank(); ++d) {
    const std::int64_t b = pads[d], e = pads[d + x.rank()];
    const std::int64_t n = x.dims[d].size + b + e;
    if (n < 0) fail("pads {} and {} of dim {} leave {} elements", b, e, d, n);
    if (mode != pad_kernels::PadMode::Constant && (b < 0 || e < 0))
      fail("negative pads (cropping) of dim {} are only supported in constant mode", d);
    if (mode != pad_kernels::PadMode::Constant && x.dims[d].size == 0 && n > 0)
      fail("dim {} is empty: mode \"{}\" has no value to repeat", d, mode_name);
    if (b == 0 && e == 0) continue;
    expect_degree(x, d, 1, "input 0 (x)", "it is padded");
    y.dims[d] = {n, 1};
  }
  return {y};
}

Shapes infer_gather_nd(const Operator& op, const Shapes& in) {
  const auto& data = in[0];
  const auto& idx = in[1];
  expect_integer(idx, "input 1 (indices)");
  expect_min_rank(data, 1, "input 0 (data)");
  expect_min_rank(idx, 1, "input 1 (indices)");
  const int b = static_cast<int>(op.attrs.get_int("batch_dims", 0));
  if (b < 0 || b >= std::min(data.rank(), idx.rank()))
    fail("attribute 'batch_dims' = {} must be in [0, {})", b, std::min(data.rank(), idx.rank()));
  const std::int64_t k = idx.dims.back().size;
  if (k < 1 || b + k > data.rank())
    fail("input 1 (indices) last dim {} must be in [1, {}] (data rank less batch_dims)", k,
         data.rank() - b);
  expect_replica(idx, data.replica, "input 1 (indices)", "one copy of every input per task");
  ParallelTensorShape y = data;
  y.dims.clear();
  for (int d = 0; d < b; ++d) {
    if (idx.dims[d].size != data.dims[d].size)
      fail("input 1 (indices) batch dim {} has size {} but input 0 (data) {}", d, idx.dims[d].size,
           data.dims[d].size);
    if (idx.dims[d].degree != data.dims[d].degree)
      fail("input 1 (indices) batch dim {} has degree {} but input 0 (data) {} (split alike)", d,
           idx.dims[d].degree, data.dims[d].degree);
    y.dims.push_back(data.dims[d]);
  }
  for (int d = b; d < idx.rank(); ++d) {
    expect_degree(idx, d, 1, "input 1 (indices)", "only batch dims are split");
    if (d + 1 < idx.rank()) y.dims.push_back({idx.dims[d].size, 1});
  }
  for (int d = b; d < data.rank(); ++d) {
    expect_degree(data, d, 1, "input 0 (data)", "only batch dims are split");
    if (d >= b + k) y.dims.push_back({data.dims[d].size, 1});
  }
  return {y};
}

Shapes infer_scatter_nd(const Operator& op, const Shapes& in) {
  const auto& data = in[0];
  const auto& idx = in[1];
  const auto& upd = in[2];
  expect_integer(idx, "input 1 (indices)");
  expect_min_rank(data, 1, "input 0 (data)");
  expect_min_rank(idx, 1, "input 1 (indices)");
  const std::string reduction = op.attrs.get_string("reduction", "none");
  pad_kernels::ScatterReduction red;
  if (!pad_kernels::scatter_reduction_of(reduction, red))
    fail("attribute 'reduction' must be \"none\", \"add\" or \"mul\", got \"{}\"", reduction);
  const std::int64_t k = idx.dims.back().size;
  if (k < 1 || k > data.rank())
    fail("input 1 (indices) last dim {} must be in [1, {}] (data rank)", k, data.rank());
  std::vector<std::int64_t> want = idx.sizes();
  want.pop_back();
  for (int d = static_cast<int>(k); d < data.rank(); ++d) want.push_back(data.dims[d].size);
  if (upd.sizes() != want)
    fail(
        "input 2 (updates) {} must have the sizes of input 1 (indices) {} but the last, then "
        "those of input 0 (data) {} from dim {}",
        upd.to_string(), idx.to_string(), data.to_string(), k);
  if (upd.dtype != data.dtype)
    fail("input 2 (updates) {} must have the type of input 0 (data) {}", upd.to_string(),
         data.to_string());
  for (int d = 0; d < data.rank(); ++d)
    expect_degree(data, d, 1, "input 0 (data)", "any index tuple may write anywhere");
  for (int d = 0; d < idx.rank(); ++d)
    expect_degree(idx, d, 1, "input 1 (indices)", "any index tuple may write anywhere");
  for (int d = 0; d < upd.rank(); ++d)
    expect_degree(upd, d, 1, "input 2 (updates)", "any index tuple may write anywhere");
  expect_replica(idx, data.replica, "input 1 (indices)", "one copy of every input per task");
  expect_replica(upd, data.replica, "input 2 (updates)", "one copy of every input per task");
  return {data};
}

}  // namespace

Shapes infer_pad_nd(const Operator& op, const Shapes& in) {
  switch (op.type) {
    case OpType::Pad:
      return infer_pad(op, in);
    case OpType::GatherND:
      return infer_gather_nd(op, in);
    default:  // ScatterND
      return infer_scatter_nd(op, in);
  }
}

}  // namespace unity::shape_rules
