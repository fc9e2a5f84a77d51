// What each task reads, operator by operator. Task t produces output piece t (block per dim and a
// replica index); from it follow the input regions and the input replica it needs. The replica
// chosen among copies follows the shape inference's order (docs/operators.md) so that, with views
// the mapping search produced, the requested copy is the one already on the task's device.
#include <algorithm>

#include "lowering_internal.h"
#include "unity/core/ops/arithmetic.h"
#include "unity/core/ops/index_operators.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/window_attrs.h"
#include "unity/core/shapes/concat_pieces.h"
#include "unity/core/shapes/reshape_groups.h"

namespace unity::executor::detail {
namespace {

using Blocks = std::vector<int>;

// The region of `shape` covering block `b` of dim `d` (a block of that dim's degree).
std::pair<std::int64_t, std::int64_t> block_range(const ParallelTensorShape& s, int d, int b) {
  const std::int64_t step = s.dims[d].size / s.dims[d].degree;
  return {b * step, (b + 1) * step};
}

Region whole(const ParallelTensorShape& s) { return full_region(s.sizes()); }

void set_block(Region& r, const ParallelTensorShape& s, int d, int b) {
  std::tie(r.begin[d], r.end[d]) = block_range(s, d, b);
}

void set_range(Region& r, int d, std::pair<std::int64_t, std::int64_t> range) {
  std::tie(r.begin[d], r.end[d]) = range;
}

// Input rows a window operator needs for output rows [o0, o1): clipped to the input.
std::pair<std::int64_t, std::int64_t> receptive_field(std::int64_t o0, std::int64_t o1,
                                                      std::int64_t size, std::int64_t kernel,
                                                      std::int64_t stride, std::int64_t pad,
                                                      std::int64_t dilation) {
  const std::int64_t first = o0 * stride - pad;
  const std::int64_t last = (o1 - 1) * stride - pad + dilation * (kernel - 1) + 1;
  return {std::max<std::int64_t>(first, 0), std::min(last, size)};
}

struct Ctx {
  const Graph& g;
  const Node& n;
  const ParallelTensorShape& out;
  PieceIndex piece;
  Region region;  // of the output piece
  std::vector<Request> requests;

  const ParallelTensorShape& in(int slot) const { return g.shape(n.inputs[slot]); }
  void add(int slot, Region r, int replica) {
    requests.push_back({slot, n.inputs[slot], std::move(r), replica});
  }
};

void elementwise_like(Ctx& c) {
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot)
    c.add(slot, c.region, c.piece.replica);
}

// An operator with a slice layout (Det: [..., m, m] -> [...]): the task's region of the leading
// dims, every trailing dim of its slices whole.
void slices(Ctx& c, const SliceLayout& layout) {
  const auto& s = c.in(0);
  const int leading = s.rank() - layout.whole_dims;
  Region r = whole(s);
  for (int j = 0; j < leading; ++j) {
    r.begin[j] = c.region.begin[j];
    r.end[j] = c.region.end[j];
  }
  c.add(0, r, c.piece.replica);
}

// Operands broadcast like numpy's (Add, ..., Where): each reads its own dims of the task's region
// whole along the dims it broadcasts, from the copy that belongs to the task's block there.
void binary(Ctx& c) {
  const int ro = c.out.rank();
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot) {
    const auto& s = c.in(slot);
    const int offset = ro - s.rank();
    Region r = whole(s);
    int bcast_linear = 0;
    for (int j = 0; j < ro; ++j) {
      const int i = j - offset;
      const bool broadcast = i < 0 || (s.dims[i].size == 1 && c.out.dims[j].size != 1);
      if (broadcast) {
        bcast_linear = bcast_linear * c.out.dims[j].degree + c.piece.block[j];
      } else {
        r.begin[i] = c.region.begin[j];
        r.end[i] = c.region.end[j];
      }
    }
    const int k = broadcast_degree(c.g, c.n, slot);
    c.add(slot, r, c.piece.replica * k + bcast_linear);
  }
}

void linear(Ctx& c) {
  const int r = c.out.rank();
  const int k = c.piece.replica;       // reduction block
  const int o = c.piece.block[r - 1];  // output-channel block
  const int sample = block_linear(c.out, c.piece.block, 0, r - 1);
  Region x = c.region;
  set_block(x, c.in(0), r - 1, k);
  c.add(0, x, o);
  Region w = whole(c.in(1));
  set_block(w, c.in(1), 0, k);
  set_block(w, c.in(1), 1, o);
  c.add(1, w, sample);
  if (c.n.inputs.size() == 3) {
    Region b = whole(c.in(2));
    set_block(b, c.in(2), 0, o);
    c.add(2, b, sample * c.in(1).dims[0].degree + k);
  }
}

// Experts: output replica q is expert block q / d(F) and FFN block q % d(F) (partial sums); the
// tokens are the output piece's.
void experts(Ctx& c) {
  const int r = c.out.rank();
  const auto& w1 = c.in(2);
  const int d_ffn = w1.dims[2].degree;
  const int e = c.piece.replica / d_ffn, f = c.piece.replica % d_ffn;
  const int sample = block_linear(c.out, c.piece.block, 0, r - 1);
  c.add(0, c.region, c.piece.replica);
  Region g = c.region;
  set_block(g, c.in(1), r - 1, e);
  c.add(1, g, f);
  for (int slot = 2; slot < static_cast<int>(c.n.inputs.size()); ++slot) {
    Region w = whole(c.in(slot));
    set_block(w, c.in(slot), 0, e);
    set_block(w, c.in(slot), slot == 3 ? 1 : 2, f);
    c.add(slot, w, sample);
  }
}

void matmul(Ctx& c) {
  const auto& a = c.in(0);
  const auto& b = c.in(1);
  const int ra = a.rank(), rb = b.rank();
  const int kk = c.piece.replica;
  const int m = c.piece.block[ra - 2];
  const int nb = c.piece.block[ra - 1];
  Region ar = c.region;
  set_block(ar, a, ra - 1, kk);
  c.add(0, ar, nb);
  Region br = whole(b);
  set_block(br, b, rb - 2, kk);
  set_block(br, b, rb - 1, nb);
  if (rb == 2 && ra > 2) {
    const int batch = block_linear(c.out, c.piece.block, 0, ra - 2);
    c.add(1, br, batch * a.dims[ra - 2].degree + m);
  } else {
    for (int d = 0; d < rb - 2; ++d) set_block(br, b, d, c.piece.block[d]);
    c.add(1, br, m);
  }
}

// The input band of every spatial dim an output band reads (its halo included).
void spatial_bands(Ctx& c, Region& xr, bool pool) {
  const auto& x = c.in(0);
  const auto& op = c.n.op;
  const int r = x.rank() - 2;
  const auto kernel = window_attr(op, "kernel", r, {});
  const auto stride = window_attr(op, "stride", r, pool ? kernel : std::vector<std::int64_t>(r, 1));
  const auto pad = window_attr(op, "padding", r, std::vector<std::int64_t>(r, 0));
  const auto dil = window_attr(op, "dilation", r, std::vector<std::int64_t>(r, 1));
  for (int i = 0; i < r; ++i)
    set_range(xr, 2 + i,
              receptive_field(c.region.begin[2 + i], c.region.end[2 + i], x.dims[2 + i].size,
                              kernel[i], stride[i], pad[i], dil[i]));
}

void conv2d(Ctx& c) {
  const auto& x = c.in(0);
  const auto& w = c.in(1);
  const std::int64_t groups = c.n.op.attrs.get_int("groups", 1);
  const int n = c.piece.block[0], o = c.piece.block[1];
  const int cc = c.piece.replica;  // input-channel block (groups == 1)
  Region xr = whole(x);
  set_block(xr, x, 0, n);
  set_block(xr, x, 1, groups == 1 ? cc : o);
  spatial_bands(c, xr, false);
  c.add(0, xr, groups == 1 ? o : 0);
  const int spatial = block_linear(c.out, c.piece.block, 2, c.out.rank());
  int d_spatial = 1;
  for (int i = 2; i < c.out.rank(); ++i) d_spatial *= c.out.dims[i].degree;
  Region wr = whole(w);
  set_block(wr, w, 0, o);
  if (groups == 1) set_block(wr, w, 1, cc);
  c.add(1, wr, n * d_spatial + spatial);
  if (c.n.inputs.size() == 3) {
    Region br = whole(c.in(2));
    set_block(br, c.in(2), 0, o);
    c.add(2, br, (n * d_spatial + spatial) * c.out.replica + cc);
  }
}

// ConvTranspose: x [N, C, ...] (C split: partial sums), weight [C, O/groups, k...], whole spatial
// dims; an output-channel block reads a copy of x (groups == 1) or its own groups' channels.
void conv_transpose(Ctx& c) {
  const auto& x = c.in(0);
  const auto& w = c.in(1);
  const std::int64_t groups = c.n.op.attrs.get_int("groups", 1);
  const int n = c.piece.block[0], o = c.piece.block[1];
  const int cc = c.piece.replica;
  Region xr = whole(x);
  set_block(xr, x, 0, n);
  set_block(xr, x, 1, groups == 1 ? cc : o);
  c.add(0, xr, groups == 1 ? o : 0);
  Region wr = whole(w);
  if (groups == 1) {
    set_block(wr, w, 0, cc);
    set_block(wr, w, 1, o);
  } else {
    set_block(wr, w, 0, o);
  }
  c.add(1, wr, n);
  if (c.n.inputs.size() == 3) {
    Region br = whole(c.in(2));
    set_block(br, c.in(2), 0, o);
    c.add(2, br, n * c.out.replica + cc);
  }
}

void pool2d(Ctx& c) {
  Region xr = c.region;
  spatial_bands(c, xr, true);
  c.add(0, xr, c.piece.replica);
}

void batch_norm(Ctx& c) {
  c.add(0, c.region, c.piece.replica);
  const int copy = c.piece.block[0] * c.in(0).replica + c.piece.replica;
  for (int slot = 1; slot < 3; ++slot) {
    Region r = whole(c.in(slot));
    set_block(r, c.in(slot), 0, c.piece.block[1]);
    c.add(slot, r, copy);
  }
}

void layer_norm(Ctx& c) {
  c.add(0, c.region, c.piece.replica);
  const int k = static_cast<int>(c.n.op.attrs.get_int("normalized_dims", 1));
  const int lead = block_linear(c.out, c.piece.block, 0, c.out.rank() - k);
  for (int slot = 1; slot < static_cast<int>(c.n.inputs.size()); ++slot)
    c.add(slot, whole(c.in(slot)), lead * c.in(0).replica + c.piece.replica);
}

// Block n of the samples, block s of the query sequence (context parallelism), head partition h:
// the query's block of rows, the key and value whole along the sequence (copy s * heads + h) and
// the weights' heads (copy n * d_s + s), in the task's own order so that the copy requested is the
// one on its device.
void attention(Ctx& c) {
  const int n = c.piece.block[0];
  const int s = c.piece.block[1];
  const int h = c.piece.replica;
  const int d_s = c.out.dims[1].degree, d_heads = c.out.replica;
  for (int slot = 0; slot < 3; ++slot) {
    Region r = whole(c.in(slot));
    set_block(r, c.in(slot), 0, n);
    if (slot == 0) set_block(r, c.in(slot), 1, s);
    c.add(slot, r, slot == 0 ? h : s * d_heads + h);
  }
  for (int slot = 3; slot < 7; ++slot) {
    Region r = whole(c.in(slot));
    set_block(r, c.in(slot), slot == 6 ? 0 : 1, h);
    c.add(slot, r, n * d_s + s);
  }
}

// LatentAttention: sample block n and head block h read x's copy h of their samples, the up
// projections' columns and w_o's rows of their heads (copy n), and their own copy (n, h) of the
// down projections and norms, which every task runs whole.
void latent_attention(Ctx& c) {
  const int n = c.piece.block[0];
  const int h = c.piece.replica;
  const int heads = c.out.replica;
  Region x = whole(c.in(0));
  set_block(x, c.in(0), 0, n);
  c.add(0, x, h);
  const auto slots = static_cast<int>(c.n.inputs.size());
  for (int slot = 1; slot < slots; ++slot) {
    // The last three inputs are always w_ukv, w_o and, before them, kv_norm; w_uq is the fourth
    // from the end.
    const int from_end = slots - slot;
    Region r = whole(c.in(slot));
    if (from_end == 1) {  // w_o [heads x v, E]
      set_block(r, c.in(slot), 0, h);
      c.add(slot, r, n);
    } else if (from_end == 2 || from_end == 5) {  // w_ukv, w_uq: their heads' columns
      set_block(r, c.in(slot), 1, h);
      c.add(slot, r, n);
    } else {  // w_dq, q_norm, w_dkv, kv_norm: whole, copy (n, h)
      c.add(slot, r, n * heads + h);
    }
  }
}

void embedding(Ctx& c) {
  const auto& idx = c.in(0);
  const bool bag = c.n.op.type == OpType::EmbeddingBag;
  const int lead = bag ? 1 : idx.rank();
  const int rows = c.piece.replica;
  const int cols = c.piece.block[lead];
  Region ir = whole(idx);
  for (int d = 0; d < lead; ++d) {
    ir.begin[d] = c.region.begin[d];
    ir.end[d] = c.region.end[d];
  }
  c.add(0, ir, rows * c.in(1).dims[1].degree + cols);
  Region wr = whole(c.in(1));
  set_block(wr, c.in(1), 0, rows);
  set_block(wr, c.in(1), 1, cols);
  c.add(1, wr, block_linear(c.out, c.piece.block, 0, lead));
}

// A Concat whose axis is cut into pieces (its `pieces` attribute) reads only the inputs inside its
// piece; every input lies wholly in one piece.
void concat(Ctx& c) {
  const int axis = c.out.axis(static_cast<int>(c.n.op.attrs.get_int("axis")));
  std::vector<std::int64_t> sizes;
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot)
    sizes.push_back(c.in(slot).dims[axis].size);
  const auto piece = concat_input_pieces(sizes, c.out.dims[axis].degree);
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot) {
    if (piece[slot] != c.piece.block[axis]) continue;
    Region r = c.region;
    r.begin[axis] = 0;
    r.end[axis] = sizes[slot];
    c.add(slot, r, c.piece.replica);
  }
}

void split(Ctx& c) {
  const auto& x = c.in(0);
  const int axis = x.axis(static_cast<int>(c.n.op.attrs.get_int("axis")));
  Region r = c.region;
  r.begin[axis] = 0;
  r.end[axis] = x.dims[axis].size;
  c.add(0, r, c.piece.replica);
}

void reshape(Ctx& c) {
  const auto& x = c.in(0);
  Region r = whole(x);
  // A partitioned dim's block is the block of the output dim its group's partition moved to.
  for (const auto& group : reshape_groups(x.sizes(), c.out.sizes()))
    if (group.in_lead >= 0 && x.dims[group.in_lead].degree > 1)
      set_block(r, x, group.in_lead, c.piece.block[group.out_lead]);
  c.add(0, r, c.piece.replica);
}

void flatten(Ctx& c) {
  const auto& x = c.in(0);
  const int axis = static_cast<int>(c.n.op.attrs.get_int("axis", 1));
  Region r = whole(x);
  if (axis > 0) set_block(r, x, 0, c.piece.block[0]);
  if (axis < x.rank()) set_block(r, x, axis, c.piece.block[1]);
  c.add(0, r, c.piece.replica);
}

// A copied dim reads the output piece's block; a broadcast dim reads its one element.
void expand(Ctx& c) {
  const auto& x = c.in(0);
  Region r = whole(x);
  const int offset = c.out.rank() - x.rank();
  for (int d = 0; d < x.rank(); ++d)
    if (x.dims[d].size == c.out.dims[d + offset].size)
      set_range(r, d, {c.region.begin[d + offset], c.region.end[d + offset]});
  c.add(0, r, c.piece.replica);
}

void transpose(Ctx& c) {
  const auto& perm = c.n.op.attrs.get_ints("perm");
  Region r = whole(c.in(0));
  for (int d = 0; d < c.out.rank(); ++d) {
    r.begin[perm[d]] = c.region.begin[d];
    r.end[perm[d]] = c.region.end[d];
  }
  c.add(0, r, c.piece.replica);
}

void reduce_dims(Ctx& c) {
  const auto& x = c.in(0);
  std::vector<bool> reduced(x.rank(), false);
  for (auto a : c.n.op.attrs.get_ints("axes")) reduced[x.axis(static_cast<int>(a))] = true;
  const bool keep = c.n.op.attrs.get_int("keepdims", 1) != 0;
  int partial_count = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (reduced[d]) partial_count *= x.dims[d].degree;
  int p = c.piece.replica % partial_count;
  Region r = whole(x);
  // Digits of p over the reduced axes, innermost last.
  for (int d = x.rank() - 1; d >= 0; --d) {
    if (!reduced[d]) continue;
    set_block(r, x, d, p % x.dims[d].degree);
    p /= x.dims[d].degree;
  }
  int j = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) {
      if (keep) ++j;
      continue;
    }
    r.begin[d] = c.region.begin[j];
    r.end[d] = c.region.end[j];
    ++j;
  }
  c.add(0, r, c.piece.replica / partial_count);
}

// Every class of the task's rows. With the classes split (vocab_parallel) the task's replica is
// a block's share of the loss: it reads its logits copy whole, gathering the other blocks.
void cross_entropy(Ctx& c) {
  const auto& logits = c.in(0);
  Region lr = whole(logits);
  for (int d = 0; d < c.out.rank(); ++d) {
    lr.begin[d] = c.region.begin[d];
    lr.end[d] = c.region.end[d];
  }
  c.add(0, lr, c.piece.replica / logits.dims.back().degree);
  c.add(1, c.region, c.piece.replica);
}

void mse(Ctx& c) {
  for (int slot = 0; slot < 2; ++slot) {
    Region r = whole(c.in(slot));
    r.begin[0] = c.region.begin[0];
    r.end[0] = c.region.end[0];
    c.add(slot, r, c.piece.replica);
  }
}

// The resized axes whole (their degree is 1), the other dims the output piece's blocks.
void resize(Ctx& c) {
  Region r = c.region;
  const auto& x = c.in(0);
  for (int d = 0; d < x.rank(); ++d)
    if (x.dims[d].size != c.out.dims[d].size) set_range(r, d, {0, x.dims[d].size});
  c.add(0, r, c.piece.replica);
}

// Pad reads its padded dims whole (degree 1) and the piece's range of the others. GatherND reads
// the piece's range of its batch dims (alike on data and indices) and the rest whole; ScatterND
// (every dim degree 1) reads everything.
void pad_nd(Ctx& c) {
  const int b =
      c.n.op.type == OpType::GatherND ? static_cast<int>(c.n.op.attrs.get_int("batch_dims", 0)) : 0;
  const std::vector<std::int64_t> pads =
      c.n.op.type == OpType::Pad ? c.n.op.attrs.get_ints("pads") : std::vector<std::int64_t>{};
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot) {
    const auto& s = c.in(slot);
    Region r = whole(s);
    for (int d = 0; d < s.rank(); ++d) {
      const bool split =
          c.n.op.type == OpType::Pad ? pads[d] == 0 && pads[d + s.rank()] == 0 : d < b;
      if (split) {
        r.begin[d] = c.region.begin[d];
        r.end[d] = c.region.end[d];
      }
    }
    c.add(slot, r, c.piece.replica);
  }
}

// The index operators: each input dim that matches an output dim of the same size reads the
// piece's range of it; the axis, and dims where the sizes differ (degree 1), are read whole.
// OneHot's output has a new dim at `axis`; ArgMax/ArgMin without keepdims lose theirs.
void index_op(Ctx& c) {
  const int ro = c.out.rank();
  int inserted = -1, removed = -1;
  if (c.n.op.type == OpType::OneHot) {
    const std::int64_t a = c.n.op.attrs.get_int("axis", -1);
    inserted = static_cast<int>(a < 0 ? a + ro : a);
  }
  if ((c.n.op.type == OpType::ArgMax || c.n.op.type == OpType::ArgMin) &&
      c.n.op.attrs.get_int("keepdims", 1) == 0) {
    const std::int64_t a = c.n.op.attrs.get_int("axis", 0);
    removed = static_cast<int>(a < 0 ? a + ro + 1 : a);
  }
  for (int slot = 0; slot < static_cast<int>(c.n.inputs.size()); ++slot) {
    const auto& s = c.in(slot);
    Region r = whole(s);
    for (int i = 0; i < s.rank(); ++i) {
      if (i == removed) continue;
      int j = i;
      if (inserted >= 0 && i >= inserted) j = i + 1;
      if (removed >= 0 && i > removed) j = i - 1;
      if (j < ro && s.dims[i].size == c.out.dims[j].size) {
        r.begin[i] = c.region.begin[j];
        r.end[i] = c.region.end[j];
      }
    }
    c.add(slot, r, c.piece.replica);
  }
}

void parallel(Ctx& c) {
  const int k = static_cast<int>(c.n.op.attrs.get_int("degree", 1));
  const int r = c.piece.replica;
  switch (c.n.op.type) {
    case OpType::Replicate:
      c.add(0, c.region, r / k);
      break;
    case OpType::Reduce:
      for (int ch = 0; ch < k; ++ch) c.add(0, c.region, r * k + ch);
      break;
    case OpType::AllReduce:
      for (int ch = 0; ch < k; ++ch) c.add(0, c.region, (r / k) * k + ch);
      break;
    default:  // Partition, Combine: the same region, at another granularity
      c.add(0, c.region, r);
  }
}

}  // namespace

int block_linear(const ParallelTensorShape& s, const std::vector<int>& block, int begin, int end) {
  int linear = 0;
  for (int d = begin; d < end; ++d) linear = linear * s.dims[d].degree + block[d];
  return linear;
}

std::vector<Request> task_requests(const Graph& g, const Node& n, int task) {
  const auto& out = n.outputs.at(0);
  Ctx c{g, n, out, piece_index(out, task), piece_region(out, task), {}};
  switch (n.op.type) {
    case OpType::Linear:
      linear(c);
      break;
    case OpType::Experts:
      experts(c);
      break;
    case OpType::MatMul:
    case OpType::BatchMatMul:
      matmul(c);
      break;
    case OpType::Conv2D:
      conv2d(c);
      break;
    case OpType::ConvTranspose:
      conv_transpose(c);
      break;
    case OpType::Pool2D:
      pool2d(c);
      break;
    case OpType::BatchNorm:
      batch_norm(c);
      break;
    case OpType::LayerNorm:
      layer_norm(c);
      break;
    case OpType::MultiHeadAttention:
      attention(c);
      break;
    case OpType::LatentAttention:
      latent_attention(c);
      break;
    case OpType::Embedding:
    case OpType::EmbeddingBag:
      embedding(c);
      break;
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
      binary(c);
      break;
    case OpType::Concat:
      concat(c);
      break;
    case OpType::Split:
      split(c);
      break;
    case OpType::Reshape:
      reshape(c);
      break;
    case OpType::Flatten:
      flatten(c);
      break;
    case OpType::Transpose:
      transpose(c);
      break;
    case OpType::Expand:
      expand(c);
      break;
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::Reduction:
      reduce_dims(c);
      break;
    case OpType::SoftmaxCrossEntropy:
      cross_entropy(c);
      break;
    case OpType::MSELoss:
      mse(c);
      break;
    case OpType::Resize:
      resize(c);
      break;
    case OpType::Pad:
    case OpType::GatherND:
    case OpType::ScatterND:
      pad_nd(c);
      break;
    default:
      if (is_parallel_op(n.op.type))
        parallel(c);
      else if (is_index_operator(n.op.type))
        index_op(c);
      else if (is_broadcast_operator(n.op.type))
        binary(c);
      else if (const SliceLayout* layout = slice_layout(n.op.type))
        slices(c, *layout);
      else
        elementwise_like(c);  // unary, Softmax (axis whole)
  }
  return c.requests;
}

}  // namespace unity::executor::detail
