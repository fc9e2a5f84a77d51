// Concat, Split, Reshape, Flatten, Transpose and Expand. Reshape and Flatten keep a degree only
// where the pieces stay contiguous blocks in row-major order: a partition of the outermost dim of
// each group of dims merged or split (reshape_groups.h).
#include <numeric>
#include <set>

#include "shape_rules.h"
#include "unity/core/shapes/concat_pieces.h"
#include "unity/core/shapes/reshape_groups.h"

namespace unity::shape_rules {
namespace {

std::int64_t product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
}

Shapes infer_concat(const Operator& op, const Shapes& in) {
  const auto& first = in[0];
  const int axis = first.axis(static_cast<int>(op.attrs.get_int("axis")));
  ParallelTensorShape y = first;
  expect_degree(first, axis, 1, "input 0", "a concatenated axis must be whole");
  for (std::size_t i = 1; i < in.size(); ++i) {
    const auto& x = in[i];
    if (x.rank() != first.rank() || x.dtype != first.dtype || x.replica != first.replica)
      fail("input {} {} does not match input 0 {}", i, x.to_string(), first.to_string());
    for (int d = 0; d < x.rank(); ++d) {
      if (d == axis) {
        if (x.dims[d].degree != 1)
          fail("input {} dim {} has degree {}: a concatenated axis must be whole", i, d,
               x.dims[d].degree);
        y.dims[d].size += x.dims[d].size;
      } else if (x.dims[d] != first.dims[d]) {
        fail("input {} {} differs from input 0 {} in dim {}", i, x.to_string(), first.to_string(),
             d);
      }
    }
  }
  // `pieces` cuts the output's axis into equal blocks, each a run of whole inputs: block k is the
  // Concat of the inputs that lie in it, so a task reads only those (paper Fig. 16b: an operator
  // after the Concat can then split the axis where its inputs already are).
  const std::int64_t pieces = op.attrs.get_int("pieces", 1);
  expect_positive(pieces, "pieces");
  if (pieces > 1) {
    const std::int64_t total = y.dims[axis].size;
    if (total % pieces != 0)
      fail("{} pieces do not divide the concatenated size {}", pieces, total);
    std::vector<std::int64_t> sizes;
    for (const auto& x : in) sizes.push_back(x.dims[axis].size);
    const auto piece = concat_input_pieces(sizes, pieces);
    std::int64_t start = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (piece[i] < 0)
        fail(
            "input {} (axis {} to {}) straddles two of the {} pieces of {}: a piece must be a "
            "run of whole inputs",
            i, start, start + sizes[i], pieces, total);
      start += sizes[i];
    }
    y.dims[axis].degree = static_cast<int>(pieces);
  }
  return {y};
}

Shapes infer_split(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const int axis = x.axis(static_cast<int>(op.attrs.get_int("axis")));
  const auto& sizes = op.attrs.get_ints("sizes");
  if (sizes.empty()) fail("attribute 'sizes' is empty");
  for (auto s : sizes) expect_positive(s, "sizes");
  if (std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != x.dims[axis].size)
    fail("sizes add up to {} but dim {} has size {}",
         std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}), axis, x.dims[axis].size);
  expect_degree(x, axis, 1, "input 0 (x)", "a split axis must be whole");
  Shapes out;
  for (auto s : sizes) {
    ParallelTensorShape y = x;
    y.dims[axis].size = s;
    out.push_back(y);
  }
  return out;
}

Shapes infer_reshape(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& target = op.attrs.get_ints("shape");
  if (target.empty()) fail("attribute 'shape' is empty");
  for (auto s : target)
    if (s <= 0) fail("attribute 'shape' must be fully resolved (no 0 or -1), got {}", s);
  if (product(target) != x.num_elements())
    fail("cannot reshape {} ({} elements) to {} elements", x.to_string(), x.num_elements(),
         product(target));
  ParallelTensorShape y = ParallelTensorShape::serial(target, x.dtype);
  y.replica = x.replica;
  for (const auto& group : reshape_groups(x.sizes(), target)) {
    for (int d = group.in_begin; d < group.in_end; ++d) {
      if (d == group.in_lead) continue;
      expect_degree(x, d, 1, "input 0 (x)",
                    "only the outermost dim of the dims a reshape merges or splits may stay "
                    "partitioned");
    }
    if (group.in_lead < 0) continue;
    const int degree = x.dims[group.in_lead].degree;
    if (degree == 1) continue;
    if (target[group.out_lead] % degree != 0)
      fail("dim {} has degree {} but its new outermost dim {} has size {}, not divisible by it",
           group.in_lead, degree, group.out_lead, target[group.out_lead]);
    y.dims[group.out_lead].degree = degree;
  }
  return {y};
}

Shapes infer_flatten(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const int axis = static_cast<int>(op.attrs.get_int("axis", 1));
  if (axis < 0 || axis > x.rank())
    fail("attribute 'axis' {} is out of range for rank {}", axis, x.rank());
  ParallelTensorShape y;
  y.dtype = x.dtype;
  y.replica = x.replica;
  auto merge = [&](int begin, int end) {
    ParallelDim m{1, 1};
    for (int d = begin; d < end; ++d) {
      m.size *= x.dims[d].size;
      if (d == begin)
        m.degree = x.dims[d].degree;
      else
        expect_degree(x, d, 1, "input 0 (x)", "only the first dim of a merged group may be split");
    }
    return m;
  };
  y.dims = {merge(0, axis), merge(axis, x.rank())};
  return {y};
}

Shapes infer_transpose(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& perm = op.attrs.get_ints("perm");
  if (static_cast<int>(perm.size()) != x.rank())
    fail("attribute 'perm' has {} entries for a tensor of rank {}", perm.size(), x.rank());
  std::set<std::int64_t> seen(perm.begin(), perm.end());
  if (static_cast<int>(seen.size()) != x.rank() || *seen.begin() != 0 ||
      *seen.rbegin() != x.rank() - 1)
    fail("attribute 'perm' is not a permutation of 0..{}", x.rank() - 1);
  ParallelTensorShape y = x;
  for (int d = 0; d < x.rank(); ++d) y.dims[d] = x.dims[perm[d]];
  return {y};
}

// Numpy broadcasting of x to `shape` (x's dims aligned to the right, each equal or 1). A dim that
// is copied keeps its degree; a dim that is broadcast is whole on both sides.
Shapes infer_expand(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& target = op.attrs.get_ints("shape");
  if (static_cast<int>(target.size()) < x.rank())
    fail("attribute 'shape' has rank {}, below the input's rank {}", target.size(), x.rank());
  for (auto s : target)
    if (s <= 0) fail("attribute 'shape' must be fully resolved (no 0 or -1), got {}", s);
  ParallelTensorShape y = ParallelTensorShape::serial(target, x.dtype);
  y.replica = x.replica;
  const int offset = static_cast<int>(target.size()) - x.rank();
  for (int d = 0; d < x.rank(); ++d) {
    const std::int64_t size = x.dims[d].size;
    if (size == target[d + offset]) {
      y.dims[d + offset].degree = x.dims[d].degree;
    } else if (size != 1) {
      fail("input 0 {} cannot be broadcast to {}: dim {} is neither 1 nor {}", x.to_string(),
           y.to_string(), d, target[d + offset]);
    }
  }
  return {y};
}

}  // namespace

Shapes infer_layout(const Operator& op, const Shapes& in) {
  switch (op.type) {
    case OpType::Concat:
      return infer_concat(op, in);
    case OpType::Split:
      return infer_split(op, in);
    case OpType::Reshape:
      return infer_reshape(op, in);
    case OpType::Flatten:
      return infer_flatten(op, in);
    case OpType::Expand:
      return infer_expand(op, in);
    default:
      return infer_transpose(op, in);
  }
}

}  // namespace unity::shape_rules
