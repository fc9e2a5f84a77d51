// Compute operators on parallel values: which replicas they may read, and what each output replica
// holds. Operators with a split reduction dimension (Linear, MatMul, BatchMatMul, Conv2D, attention
// heads, embedding rows, ReduceSum/Mean) leave one partial sum per block of that dimension; the
// bias of a split Linear or Conv2D is added by the first block only, so the partial sums add up to
// the whole.
#include <algorithm>
#include <numeric>

#include "evaluate_internal.h"
#include "kernels.h"
#include "unity/core/ops/arithmetic.h"
#include "unity/core/ops/experts_kernels.h"
#include "unity/core/ops/index_kernels.h"
#include "unity/core/ops/latent_attention.h"
#include "unity/core/ops/mask_kernels.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/pad_kernels.h"
#include "unity/core/ops/reduction.h"
#include "unity/core/ops/resize.h"
#include "unity/core/ops/window_attrs.h"

namespace unity::rules::detail {
namespace {

using kernels::Range;

bool is_dense(OpType t) {
  switch (t) {
    case OpType::Linear:
    case OpType::MatMul:
    case OpType::BatchMatMul:
    case OpType::Conv2D:
    case OpType::ConvTranspose:
    case OpType::MultiHeadAttention:
    case OpType::LatentAttention:
    case OpType::Embedding:
    case OpType::EmbeddingBag:
    case OpType::Experts:
      return true;
    default:
      return false;
  }
}

// Operators that are linear in each operand separately may read partial sums.
bool reads_partials(const Operator& op) {
  if (const PointwiseFunction* f = pointwise_function(op.type)) return f->linear;
  switch (op.type) {
    case OpType::Concat:
    case OpType::Split:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Transpose:
    case OpType::ReduceSum:
    case OpType::ReduceMean:
      return true;
    case OpType::Pool2D:
      return op.attrs.get_string("pool") == "avg";
    case OpType::Resize:  // a fixed linear map of each slice
      return true;
    default:
      return false;
  }
}

void require_copies(const OpContext& c, const char* why) {
  for (std::size_t i = 0; i < c.in.size(); ++i)
    if (c.in[i]->layout.has_partial())
      undefined("input {} holds partial sums ({}) but {} {}", i, c.in[i]->layout.to_string(),
                to_string(c.op.type), why);
}

// Product of the degrees of the output dims operand `slot` is broadcast over (as the core counts
// it).
int broadcast_degree(const ParallelTensorShape& a, const ParallelTensorShape& b) {
  const int r = std::max(a.rank(), b.rank());
  int k = 1;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const ParallelDim da = ia >= 0 ? a.dims[ia] : ParallelDim{1, 1};
    const ParallelDim db = ib >= 0 ? b.dims[ib] : ParallelDim{1, 1};
    if (da.size != db.size && da.size == 1) k *= db.degree;
  }
  return k;
}

ReplicaLayout binary_layout(const OpContext& c) {
  ReplicaLayout outer[2];
  for (int slot = 0; slot < 2; ++slot) {
    const int k = broadcast_degree(c.in[slot]->shape, c.in[1 - slot]->shape);
    const auto split = c.in[slot]->layout.split_inner(k);
    if (!split || split->second.has_partial())
      undefined(
          "input {} is broadcast to {} partitions, so its innermost {} replicas must be copies; "
          "they are {}",
          slot, k, k, c.in[slot]->layout.to_string());
    outer[slot] = split->first;
  }
  const ReplicaLayout &a = outer[0], &b = outer[1];
  if (!a.has_partial() && !b.has_partial()) return ReplicaLayout::copies(a.size());
  switch (c.op.type) {
    case OpType::Add:
    case OpType::Sub:
      if (a != b)
        undefined("adds partial sums split differently ({} and {})", a.to_string(), b.to_string());
      return a;
    case OpType::Mul:
      if (a.has_partial() && b.has_partial()) undefined("multiplies two partial sums");
      return a.has_partial() ? a : b;
    default:
      if (b.has_partial()) undefined("divides by partial sums");
      return a;
  }
}

// The blocks a vocabulary-parallel cross-entropy splits its classes into (1 when whole).
int vocab_blocks(const OpContext& c) { return c.in[0]->shape.dims.back().degree; }

std::string activation_of(const Operator& op) { return op.attrs.get_string("activation", "none"); }

DenseTensor activate(const Operator& op, DenseTensor t) {
  const std::string a = activation_of(op);
  if (a != "none")
    for (auto& v : t.data) v = kernels::activation(a, v);
  return t;
}

Range block(std::int64_t size, int degree, int q) {
  const std::int64_t b = size / degree;
  return {q * b, (q + 1) * b};
}

kernels::Conv2DParams conv_params(const OpContext& c) {
  const Operator& op = c.op;
  const int r = c.in[0]->shape.rank() - 2;
  kernels::Conv2DParams p;
  p.stride = window_attr(op, "stride", r, std::vector<std::int64_t>(r, 1));
  p.pad = window_attr(op, "padding", r, std::vector<std::int64_t>(r, 0));
  p.dil = window_attr(op, "dilation", r, std::vector<std::int64_t>(r, 1));
  p.groups = op.attrs.get_int("groups", 1);
  return p;
}

// Columns [begin, end) of a matrix [rows, cols] (rows [begin, end) when `by_rows`).
DenseTensor matrix_block(const DenseTensor& m, std::int64_t begin, std::int64_t end, bool by_rows) {
  const std::int64_t rows = m.sizes[0], cols = m.sizes[1];
  DenseTensor b(by_rows ? std::vector<std::int64_t>{end - begin, cols}
                        : std::vector<std::int64_t>{rows, end - begin});
  for (std::int64_t i = 0; i < b.sizes[0]; ++i)
    for (std::int64_t j = 0; j < b.sizes[1]; ++j)
      b.data[static_cast<std::size_t>(i * b.sizes[1] + j)] =
          by_rows ? m.data[static_cast<std::size_t>((begin + i) * cols + j)]
                  : m.data[static_cast<std::size_t>(i * cols + begin + j)];
  return b;
}

// LatentAttention's block q of its heads: the heads' columns of w_uq and w_ukv and rows of w_o,
// the down projections and norms whole (unity/core/ops/latent_attention.h).
DenseTensor latent_attention_partial(const OpContext& c, int q) {
  namespace la = latent_attention;
  const std::size_t inputs = c.in.size();
  auto whole = [&](int s) -> const DenseTensor& {
    return c.piece(static_cast<std::size_t>(la::input_of(s, inputs)), 0);
  };
  const auto& uq_shape = c.in[static_cast<std::size_t>(la::input_of(la::kWuq, inputs))]->shape;
  const std::int64_t heads = c.op.attrs.get_int("num_heads");
  const Range hb = block(heads, uq_shape.dims[1].degree, q);
  const std::int64_t qk =
      c.op.attrs.get_int("qk_nope_head_dim") + c.op.attrs.get_int("qk_rope_head_dim");
  const std::int64_t kvu =
      c.op.attrs.get_int("qk_nope_head_dim") + c.op.attrs.get_int("v_head_dim");
  const std::int64_t v = c.op.attrs.get_int("v_head_dim");
  const DenseTensor uq = matrix_block(whole(la::kWuq), hb.first * qk, hb.second * qk, false);
  const DenseTensor ukv = matrix_block(whole(la::kWukv), hb.first * kvu, hb.second * kvu, false);
  const DenseTensor o = matrix_block(whole(la::kWo), hb.first * v, hb.second * v, true);
  la::Inputs<double> in;
  for (int s = 0; s < la::kSlots; ++s)
    if (la::input_of(s, inputs) >= 0) in.at[s] = whole(s).data.data();
  in.at[la::kWuq] = uq.data.data();
  in.at[la::kWukv] = ukv.data.data();
  in.at[la::kWo] = o.data.data();
  const DenseTensor& x = whole(la::kX);
  const la::Dims d = la::make_dims(c.op, inputs, x.sizes, uq.sizes, whole(la::kWdkv).sizes);
  DenseTensor y(x.sizes);
  la::forward(d, in, y.data.data());
  return y;
}

// One partial sum of a dense operator: block q of its reduction dimension.
DenseTensor dense_partial(const OpContext& c, int q) {
  const Operator& op = c.op;
  const auto& x = c.piece(0, 0);
  switch (op.type) {
    case OpType::Linear: {
      const auto& xs = c.in[0]->shape;
      const auto& k = xs.dims[xs.rank() - 1];
      auto y = kernels::matmul(x.rank() == 1 ? kernels::reshape(x, {1, x.sizes[0]}) : x,
                               c.piece(1, 0), block(k.size, k.degree, q));
      if (x.rank() == 1) y = kernels::reshape(y, {y.sizes[1]});
      if (c.in.size() == 3 && q == 0) y = kernels::binary(OpType::Add, y, c.piece(2, 0));
      return activate(op, y);
    }
    case OpType::Experts: {
      // Block q / d(F) of the experts and q % d(F) of the FFN width: the other experts' gates
      // and the other FFN columns' rows of w2 zeroed, which leaves exactly this block's share.
      const auto& w1s = c.in[2]->shape;
      const auto& es = w1s.dims[0];
      const auto& fs = w1s.dims[2];
      const Range eb = block(es.size, es.degree, q / fs.degree);
      const Range fb = block(fs.size, fs.degree, q % fs.degree);
      DenseTensor gates = c.piece(1, 0);
      DenseTensor w2 = c.piece(3, 0);
      const std::int64_t n_e = es.size, n_f = fs.size, h = x.sizes.back();
      for (std::size_t i = 0; i < gates.data.size(); ++i) {
        const auto e = static_cast<std::int64_t>(i) % n_e;
        if (e < eb.first || e >= eb.second) gates.data[i] = 0;
      }
      for (std::size_t i = 0; i < w2.data.size(); ++i) {
        const auto f = (static_cast<std::int64_t>(i) / h) % n_f;
        if (f < fb.first || f >= fb.second) w2.data[i] = 0;
      }
      experts_kernels::ExpertsDims d;
      d.hidden = h;
      d.tokens = static_cast<std::int64_t>(x.data.size()) / h;
      d.experts = n_e;
      d.ffn = n_f;
      d.gated = c.in.size() == 5;
      DenseTensor y(x.sizes);
      experts_kernels::forward(d, x.data.data(), gates.data.data(), c.piece(2, 0).data.data(),
                               w2.data.data(), d.gated ? c.piece(4, 0).data.data() : nullptr,
                               y.data.data());
      return y;
    }
    case OpType::MatMul:
    case OpType::BatchMatMul: {
      const auto& as = c.in[0]->shape;
      const auto& k = as.dims[as.rank() - 1];
      return kernels::matmul(x, c.piece(1, 0), block(k.size, k.degree, q));
    }
    case OpType::Conv2D:
    case OpType::ConvTranspose: {
      const kernels::Conv2DParams p = conv_params(c);
      const auto& ch = c.in[0]->shape.dims[1];
      const Range cr = p.groups == 1 ? block(ch.size, ch.degree, q) : Range{0, ch.size};
      const int r = c.in[0]->shape.rank() - 2;
      auto y = op.type == OpType::Conv2D
                   ? kernels::conv2d(x, c.piece(1, 0), p, cr)
                   : kernels::conv_transpose(
                         x, c.piece(1, 0), p,
                         window_attr(op, "output_padding", r, std::vector<std::int64_t>(r, 0)), cr);
      if (c.in.size() == 3 && q == 0) {
        const auto& b = c.piece(2, 0);
        std::vector<std::int64_t> view(static_cast<std::size_t>(r + 1), 1);
        view[0] = b.sizes[0];
        y = kernels::binary(OpType::Add, y, kernels::reshape(b, view));
      }
      return activate(op, y);
    }
    case OpType::LatentAttention:
      return latent_attention_partial(c, q);
    case OpType::MultiHeadAttention: {
      std::vector<const DenseTensor*> in;
      for (std::size_t i = 0; i < 7; ++i) in.push_back(&c.piece(i, 0));
      const std::int64_t heads = op.attrs.get_int("num_heads");
      // The reference kernel is plain attention; it must not stand in for another one.
      if (op.attrs.get_int("num_kv_heads", heads) != heads || op.attrs.get_int("rotary", 0) != 0 ||
          op.attrs.get_int("causal", 0) != 0)
        undefined("the evaluator has no grouped-query, rotary or causal attention");
      const int d_heads = c.in[3]->shape.dims[1].degree;
      const std::int64_t head_dim = c.in[3]->shape.dims[1].size / heads;  // w_q [E, heads x D]
      return kernels::attention(in, heads, head_dim, block(heads, d_heads, q));
    }
    default: {
      const auto& rows = c.in[1]->shape.dims[0];
      const Range r = block(rows.size, rows.degree, q);
      if (op.type == OpType::Embedding) return kernels::embedding(x, c.piece(1, 0), r);
      return kernels::embedding_bag(x, c.piece(1, 0),
                                    op.attrs.get_string("aggregate", "sum") == "mean", r);
    }
  }
}

std::vector<int> normalized_axes(const Operator& op, int rank) {
  std::vector<int> axes;
  for (auto a : op.attrs.get_ints("axes")) axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Output replica j*extra+q of a reduction: replica j of the input summed over block q of the
// reduced axes (row-major over the reduced axes, the first one outermost).
std::vector<DenseTensor> reduce_replicas(const OpContext& c) {
  const auto& xs = c.in[0]->shape;
  const auto axes = normalized_axes(c.op, xs.rank());
  const bool keep = c.op.attrs.get_int("keepdims", 1) != 0;
  const bool mean = c.op.type == OpType::ReduceMean;
  int extra = 1;
  for (int a : axes) extra *= xs.dims[a].degree;
  std::vector<DenseTensor> out;
  for (int j = 0; j < xs.replica; ++j)
    for (int q = 0; q < extra; ++q) {
      std::vector<Range> blocks(axes.size());
      int rest = q;
      for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
        const auto& dim = xs.dims[axes[i]];
        blocks[i] = block(dim.size, dim.degree, rest % dim.degree);
        rest /= dim.degree;
      }
      if (c.op.type != OpType::Reduction) {
        out.push_back(kernels::reduce(c.piece(0, j), axes, blocks, keep, mean));
        continue;
      }
      // The core's arithmetic on the block (a partial sum for l1 and sum_square).
      DenseTensor x = c.piece(0, j);
      for (std::size_t i = 0; i < axes.size(); ++i)
        x = slice(x, axes[i], blocks[i].first, blocks[i].second);
      std::vector<std::int64_t> sizes;
      for (int d = 0; d < x.rank(); ++d) {
        const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
        if (!reduced || keep) sizes.push_back(reduced ? 1 : x.sizes[d]);
      }
      DenseTensor y(sizes);
      reduction_forward(reduction_kind(c.op), x.sizes, axes, x.data.data(), y.data.data());
      out.push_back(std::move(y));
    }
  return out;
}

bool is_index_op(OpType t) {
  return t == OpType::TopK || t == OpType::GatherElements || t == OpType::ScatterElements ||
         t == OpType::OneHot || t == OpType::ArgMax || t == OpType::ArgMin;
}

// The partitions of `out` an operand of shape `s` is broadcast to (it lacks the dim, or has size 1
// where the output does not): the product of those dims' degrees.
int broadcast_degree_to(const ParallelTensorShape& s, const ParallelTensorShape& out) {
  int k = 1;
  for (int j = 0; j < out.rank(); ++j) {
    const int i = j - (out.rank() - s.rank());
    if (i < 0 || (s.dims[i].size == 1 && out.dims[j].size != 1)) k *= out.dims[j].degree;
  }
  return k;
}

// Compare, Logical, Where: each operand's innermost replicas (one per partition it is broadcast to)
// are copies, and none are partial sums: they are not linear.
ReplicaLayout mask_layout(const OpContext& c) {
  ReplicaLayout outer;
  for (std::size_t slot = 0; slot < c.in.size(); ++slot) {
    const int k = broadcast_degree_to(c.in[slot]->shape, c.out_shapes[0]);
    const auto split = c.in[slot]->layout.split_inner(k);
    if (!split || split->second.has_partial() || split->first.has_partial())
      undefined("input {} ({}) must be copies, {} of them per partition it is broadcast to", slot,
                c.in[slot]->layout.to_string(), k);
    outer = split->first;
  }
  return ReplicaLayout::copies(outer.size());
}

// The operands of a mask or Arithmetic operator on replica j, each from the copy of its piece that
// belongs to replica j, and the output's sizes: the pieces' (a micro-batch's), broadcast.
struct BroadcastPieces {
  std::vector<const double*> in;
  std::vector<std::vector<std::int64_t>> sizes;
  std::vector<std::int64_t> out_sizes;
};

BroadcastPieces broadcast_pieces(const OpContext& c, int j) {
  BroadcastPieces p;
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    const int k =
        c.op.type == OpType::Cast ? 1 : broadcast_degree_to(c.in[i]->shape, c.out_shapes[0]);
    const DenseTensor& piece = c.piece(i, j * k);
    p.in.push_back(piece.data.data());
    p.sizes.push_back(piece.sizes);
  }
  for (const auto& s : p.sizes)
    if (s.size() > p.out_sizes.size()) p.out_sizes.resize(s.size(), 1);
  for (const auto& s : p.sizes)
    for (std::size_t d = 0; d < s.size(); ++d) {
      auto& o = p.out_sizes[d + p.out_sizes.size() - s.size()];
      if (s[d] != 1) o = s[d];
    }
  return p;
}

// A mask operator on replica j (the core's mask kernels, in double; masks as 0 and 1).
DenseTensor mask_output(const OpContext& c, int j) {
  const BroadcastPieces p = broadcast_pieces(c, j);
  DenseTensor out(p.out_sizes);
  mask_kernels::forward(mask_kernels::mask_function(c.op), p.in, p.sizes, p.out_sizes,
                        out.data.data());
  return out;
}

// Arithmetic on replica j (the core's kernels, in double).
DenseTensor arithmetic_output(const OpContext& c, int j) {
  const BroadcastPieces p = broadcast_pieces(c, j);
  DenseTensor out(p.out_sizes);
  arithmetic::forward(arithmetic::arithmetic_of(c.op), p.in, p.sizes, p.out_sizes,
                      !is_floating(c.out_shapes[0].dtype), out.data.data());
  return out;
}

// The index operators on replica j (the core's index kernels, in double; indices as doubles).
std::vector<DenseTensor> index_outputs(const OpContext& c, int j) {
  namespace ik = index_kernels;
  const Operator& op = c.op;
  const auto& x = c.piece(0, j);
  const int rank = x.rank();
  std::vector<DenseTensor> out;
  for (const auto& s : c.out_shapes) out.emplace_back(s.sizes());
  auto axis_of = [&](std::int64_t fallback, int r) {
    const std::int64_t a = op.attrs.get_int("axis", fallback);
    return static_cast<int>(a < 0 ? a + r : a);
  };
  auto out_of_range = [] { undefined("an index lies outside its axis"); };
  switch (op.type) {
    case OpType::TopK:
      ik::top_k(x.data.data(), x.sizes, axis_of(-1, rank), op.attrs.get_int("k"),
                op.attrs.get_int("largest", 1) != 0, out[0].data.data(), out[1].data.data());
      break;
    case OpType::ArgMax:
    case OpType::ArgMin:
      ik::arg_extreme(x.data.data(), x.sizes, axis_of(0, rank), op.type == OpType::ArgMax,
                      op.attrs.get_int("select_last_index", 0) != 0, out[0].data.data());
      break;
    case OpType::OneHot:
      ik::one_hot(x.data.data(), x.sizes, axis_of(-1, rank + 1), op.attrs.get_int("depth"),
                  op.attrs.get_double("off_value", 0.0), op.attrs.get_double("on_value", 1.0),
                  out[0].data.data());
      break;
    case OpType::GatherElements: {
      const auto& idx = c.piece(1, j);
      if (!ik::gather_elements(x.data.data(), x.sizes, idx.data.data(), idx.sizes, axis_of(0, rank),
                               out[0].data.data()))
        out_of_range();
      break;
    }
    default: {  // ScatterElements
      const auto& idx = c.piece(1, j);
      if (!ik::scatter_elements(x.data.data(), x.sizes, idx.data.data(), c.piece(2, j).data.data(),
                                idx.sizes, axis_of(0, rank),
                                op.attrs.get_string("reduction", "none") == "add",
                                out[0].data.data()))
        out_of_range();
    }
  }
  return out;
}

bool is_pad_nd_op(OpType t) {
  return t == OpType::Pad || t == OpType::GatherND || t == OpType::ScatterND;
}

// Pad, GatherND, ScatterND on replica j (the core's pad kernels, in double; indices as doubles).
DenseTensor pad_nd_output(const OpContext& c, int j) {
  namespace pk = pad_kernels;
  const Operator& op = c.op;
  const auto& x = c.piece(0, j);
  DenseTensor out(c.out_shapes[0].sizes());
  if (op.type == OpType::Pad) {
    pk::PadMode mode = pk::PadMode::Constant;
    pk::pad_mode_of(op.attrs.get_string("mode", "constant"), mode);
    pk::pad(x.data.data(), x.sizes, op.attrs.get_ints("pads"), mode,
            op.attrs.get_double("value", 0.0), out.data.data());
    return out;
  }
  const auto& idx = c.piece(1, j);
  const int b =
      op.type == OpType::GatherND ? static_cast<int>(op.attrs.get_int("batch_dims", 0)) : 0;
  const pk::NdLayout L = pk::nd_layout(x.sizes, idx.data.data(), idx.sizes, b);
  if (!L.ok) undefined("an index tuple lies outside the data");
  if (op.type == OpType::GatherND)
    pk::gather_nd(x.data.data(), L, out.data.data());
  else {
    pk::ScatterReduction red = pk::ScatterReduction::None;
    pk::scatter_reduction_of(op.attrs.get_string("reduction", "none"), red);
    pk::scatter_nd(x.data.data(), static_cast<std::int64_t>(x.data.size()),
                   c.piece(2, j).data.data(), L, red, out.data.data());
  }
  return out;
}

DenseTensor passthrough(const OpContext& c, int j) {
  const Operator& op = c.op;
  const auto& x = c.piece(0, j);
  switch (op.type) {
    case OpType::Softmax:
      return kernels::softmax(x,
                              c.in[0]->shape.axis(static_cast<int>(op.attrs.get_int("axis", -1))));
    case OpType::Reshape:
    case OpType::Flatten:
      return kernels::reshape(x, c.out_shapes[0].sizes());
    case OpType::Transpose:
      return transpose(x, op.attrs.get_ints("perm"));
    case OpType::Resize: {
      // The resized axes are whole; the others (and axes resized to their own size, the
      // identity) keep the extents this piece has (a micro-batch's).
      const ResizeSpec spec = resize_spec(op, x.rank());
      DenseTensor y(x.sizes);
      for (std::size_t i = 0; i < spec.axes.size(); ++i) {
        const auto a = static_cast<std::size_t>(spec.axes[i]);
        if (c.in[0]->shape.dims[a].size != spec.sizes[i]) y.sizes[a] = spec.sizes[i];
      }
      y.data.assign(static_cast<std::size_t>(std::accumulate(y.sizes.begin(), y.sizes.end(),
                                                             std::int64_t{1}, std::multiplies<>())),
                    0.0);
      resize_forward(spec, x.sizes, y.sizes, x.data.data(), y.data.data());
      return y;
    }
    case OpType::Concat: {
      std::vector<DenseTensor> parts;
      for (std::size_t i = 0; i < c.in.size(); ++i) parts.push_back(c.piece(i, j));
      return concat(parts, c.in[0]->shape.axis(static_cast<int>(op.attrs.get_int("axis"))));
    }
    case OpType::Pool2D: {
      const int r = c.in[0]->shape.rank() - 2;
      kernels::Pool2DParams p;
      p.max = op.attrs.get_string("pool") == "max";
      p.kernel = window_attr(op, "kernel", r, {});
      p.stride = window_attr(op, "stride", r, p.kernel);
      p.pad = window_attr(op, "padding", r, std::vector<std::int64_t>(r, 0));
      p.pad_end = window_attr(op, "padding_end", r, p.pad);
      p.dil = window_attr(op, "dilation", r, std::vector<std::int64_t>(r, 1));
      return kernels::pool2d(x, p);
    }
    case OpType::BatchNorm:
      return activate(op, kernels::batch_norm(x, c.piece(1, j), c.piece(2, j),
                                              op.attrs.get_double("epsilon", 1e-5),
                                              c.in[0]->shape.dims[0].degree));
    case OpType::LayerNorm: {
      const int dims = static_cast<int>(op.attrs.get_int("normalized_dims", 1));
      if (op.attrs.get_int("rms", 0) != 0) undefined("the evaluator has no RMSNorm (rms = 1)");
      const bool affine = c.in.size() == 3;
      return kernels::layer_norm(x, dims, affine ? &c.piece(1, j) : nullptr,
                                 affine ? &c.piece(2, j) : nullptr,
                                 op.attrs.get_double("epsilon", 1e-5));
    }
    case OpType::MSELoss:
      return kernels::mse_loss(x, c.piece(1, j));
    default:
      if (const AxisFunction* f = axis_function(op.type))
        return kernels::map_along_axis(
            *f, x, c.in[0]->shape.axis(static_cast<int>(op.attrs.get_int("axis", -1))),
            operator_parameters(op));
      return kernels::map_unary(op, x);
  }
}

}  // namespace

std::vector<ReplicaLayout> output_layouts(const OpContext& c) {
  const Operator& op = c.op;
  const auto& out = c.out_shapes[0];
  if (is_dense(op.type)) {
    require_copies(c, "reads one copy per task");
    if (out.replica > 1 && activation_of(op) != "none")
      undefined("applies activation '{}' to partial sums (reduction degree {})", activation_of(op),
                out.replica);
    return {ReplicaLayout::partials(out.replica)};
  }
  if (is_elementwise_binary(op.type)) return {binary_layout(c)};
  if (is_broadcast_operator(op.type)) return {mask_layout(c)};
  if (!reads_partials(op)) require_copies(c, "is not linear");
  if (op.type == OpType::SoftmaxCrossEntropy)
    return {c.in[0]->layout.with_inner({vocab_blocks(c), true})};
  if (op.type == OpType::Concat)
    for (std::size_t i = 1; i < c.in.size(); ++i)
      if (c.in[i]->layout != c.in[0]->layout)
        undefined("concatenates inputs whose replicas differ ({} and {})",
                  c.in[0]->layout.to_string(), c.in[i]->layout.to_string());
  if (op.type == OpType::ReduceSum || op.type == OpType::ReduceMean || op.type == OpType::Reduction)
    return {c.in[0]->layout.with_inner({out.replica / c.in[0]->shape.replica, true})};
  return std::vector<ReplicaLayout>(c.out_shapes.size(), c.in[0]->layout);
}

std::vector<std::vector<DenseTensor>> compute_replicas(const OpContext& c) {
  const Operator& op = c.op;
  const auto& out = c.out_shapes[0];
  if (is_dense(op.type)) {
    std::vector<DenseTensor> parts;
    for (int q = 0; q < out.replica; ++q) parts.push_back(dense_partial(c, q));
    return {parts};
  }
  if (op.type == OpType::ReduceSum || op.type == OpType::ReduceMean || op.type == OpType::Reduction)
    return {reduce_replicas(c)};
  if (op.type == OpType::SoftmaxCrossEntropy) {
    // Each block of the classes holds an equal share of the loss (its sum is the loss; the
    // shares a real kernel keeps differ, their sum does not).
    const int blocks = vocab_blocks(c);
    std::vector<DenseTensor> parts;
    for (int j = 0; j < out.replica; ++j) {
      DenseTensor loss = kernels::softmax_cross_entropy(c.piece(0, j / blocks), c.piece(1, j));
      for (double& v : loss.data) v /= blocks;
      parts.push_back(std::move(loss));
    }
    return {parts};
  }
  if (is_elementwise_binary(op.type)) {
    const int ka = broadcast_degree(c.in[0]->shape, c.in[1]->shape);
    const int kb = broadcast_degree(c.in[1]->shape, c.in[0]->shape);
    std::vector<DenseTensor> parts;
    for (int j = 0; j < out.replica; ++j)
      parts.push_back(kernels::binary(op.type, c.piece(0, j * ka), c.piece(1, j * kb)));
    return {parts};
  }
  if (op.type == OpType::Split) {
    const int axis = c.in[0]->shape.axis(static_cast<int>(op.attrs.get_int("axis")));
    std::vector<std::vector<DenseTensor>> outs(c.out_shapes.size());
    for (int j = 0; j < out.replica; ++j) {
      auto parts = kernels::split(c.piece(0, j), axis, op.attrs.get_ints("sizes"));
      for (std::size_t o = 0; o < parts.size(); ++o) outs[o].push_back(std::move(parts[o]));
    }
    return outs;
  }
  if (is_index_op(op.type)) {
    std::vector<std::vector<DenseTensor>> outs(c.out_shapes.size());
    for (int j = 0; j < out.replica; ++j) {
      auto parts = index_outputs(c, j);
      for (std::size_t o = 0; o < parts.size(); ++o) outs[o].push_back(std::move(parts[o]));
    }
    return outs;
  }
  if (is_mask_operator(op.type)) {
    std::vector<DenseTensor> parts;
    for (int j = 0; j < out.replica; ++j) parts.push_back(mask_output(c, j));
    return {parts};
  }
  if (op.type == OpType::Arithmetic) {
    std::vector<DenseTensor> parts;
    for (int j = 0; j < out.replica; ++j) parts.push_back(arithmetic_output(c, j));
    return {parts};
  }
  if (const auto evaluate = operator_definition(op.type).evaluate) {
    // An operator described in its own file: its kernel on each copy of its inputs.
    std::vector<std::vector<DenseTensor>> outs(c.out_shapes.size());
    for (int j = 0; j < out.replica; ++j) {
      std::vector<DoubleTensor> in;
      for (std::size_t i = 0; i < c.in.size(); ++i) {
        DenseTensor x = c.piece(static_cast<int>(i), j);
        in.push_back({std::move(x.sizes), std::move(x.data)});
      }
      std::vector<DoubleTensor> results = evaluate(op, in);
      for (std::size_t o = 0; o < outs.size(); ++o) {
        DenseTensor y;
        y.sizes = std::move(results.at(o).sizes);
        y.data = std::move(results.at(o).data);
        outs[o].push_back(std::move(y));
      }
    }
    return outs;
  }
  if (is_pad_nd_op(op.type)) {
    std::vector<DenseTensor> parts;
    for (int j = 0; j < out.replica; ++j) parts.push_back(pad_nd_output(c, j));
    return {parts};
  }
  std::vector<DenseTensor> parts;
  for (int j = 0; j < out.replica; ++j) parts.push_back(passthrough(c, j));
  return {parts};
}

}  // namespace unity::rules::detail
