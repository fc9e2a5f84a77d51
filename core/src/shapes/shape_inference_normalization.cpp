// BatchNorm and LayerNorm (RMSNorm is a LayerNorm with "rms" = 1): statistics are computed over
// dimensions that must be whole on each device, and the affine parameters are split like the
// channels they scale.
#include "shape_rules.h"

namespace unity::shape_rules {
namespace {

Shapes infer_batch_norm(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  check_activation(op);
  expect_min_rank(x, 2, "input 0 (x [N, C, ...])");
  expect_floating(x, "input 0 (x)");
  if (op.attrs.get_double("epsilon", 1e-5) <= 0) fail("attribute 'epsilon' must be positive");
  for (int d = 2; d < x.rank(); ++d)
    expect_degree(x, d, 1, "input 0 (x)", "batch statistics need whole spatial planes");
  const char* names[] = {"input 1 (scale)", "input 2 (bias)"};
  for (int i = 1; i < 3; ++i) {
    expect_rank(in[i], 1, names[i - 1]);
    expect_size(in[i], 0, x.dims[1].size, names[i - 1]);
    expect_degree(in[i], 0, x.dims[1].degree, names[i - 1], "split like the channels");
    expect_replica(in[i], x.dims[0].degree * x.replica, names[i - 1],
                   "one copy per sample partition");
  }
  return {x};
}

Shapes infer_layer_norm(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_floating(x, "input 0 (x)");
  const std::int64_t k = op.attrs.get_int("normalized_dims", 1);
  if (k < 1 || k > x.rank())
    fail("attribute 'normalized_dims' is {} but the input has rank {}", k, x.rank());
  if (op.attrs.get_double("epsilon", 1e-5) <= 0) fail("attribute 'epsilon' must be positive");
  const int first = x.rank() - static_cast<int>(k);
  for (int d = first; d < x.rank(); ++d)
    expect_degree(x, d, 1, "input 0 (x)", "normalised dims must be whole on each device");
  // "rms" = 1: RMSNorm (x / rms(x) * gamma: no mean subtraction, no beta).
  const std::int64_t rms = op.attrs.get_int("rms", 0);
  if (rms != 0 && rms != 1) fail("attribute 'rms' must be 0 or 1, got {}", rms);
  if (rms == 1 && in.size() != 2)
    fail("RMSNorm (rms = 1) takes x and gamma, got {} inputs", in.size());
  if (rms == 0 && in.size() == 2) fail("LayerNorm takes gamma and beta together, or neither");
  const char* names[] = {"input 1 (gamma)", "input 2 (beta)"};
  for (std::size_t i = 1; i < in.size(); ++i) {
    const auto& p = in[i];
    expect_rank(p, static_cast<int>(k), names[i - 1]);
    for (int d = 0; d < k; ++d) {
      expect_size(p, d, x.dims[first + d].size, names[i - 1]);
      expect_degree(p, d, 1, names[i - 1], "normalised dims are whole");
    }
    expect_replica(p, degree_product(x, 0, first) * x.replica, names[i - 1],
                   "one copy per partition of the leading dims");
  }
  return {x};
}

}  // namespace

Shapes infer_normalization(const Operator& op, const Shapes& in) {
  return op.type == OpType::BatchNorm ? infer_batch_norm(op, in) : infer_layer_norm(op, in);
}

}  // namespace unity::shape_rules
