// Exporters write attention as its pieces; after the import, each attention in that form becomes
// one MultiHeadAttention (q, k, v, w_q, w_k, w_v, w_o; "num_heads", "causal"), which is what the
// cost model and the substitutions know. The form, in our operators (torch's nn.Linear + view +
// transpose code, GPT/nanoGPT style, and F.scaled_dot_product_attention as torch >= 2.0 exports
// it):
//
//   Q = Linear(xq, w_q) -> Reshape [n, s, h, d] -> Transpose to [n, h, s, d]   (likewise V)
//   K = Linear(xk, w_k) -> Reshape [n, s, h, d] -> Transpose(s) to [n, h, d, s]
//   (or Q, K, V = the pieces of Split(Linear(x, w_qkv [e, 3e]), last axis), nanoGPT's c_attn)
//   P = Softmax(last axis)(BatchMatMul(Q, K) * scale [+ causal mask])
//   y = Linear(Transpose(BatchMatMul(P, V)) to [n, s, h, d] -> Reshape [n, s, e], w_o)
//
// ScalarMuls anywhere on the Q and K paths or on the scores multiply into the scale, which must be
// 1/sqrt(d) (MultiHeadAttention's); SDPA exports scale Q and K by its square root each. The mask is
// an Add of a Weight that the importer recognised as causal (attention_masks.h); any other mask
// leaves the pieces as they are. Every intermediate tensor must have no other reader.
//
// Projection biases: our operator has none, so they are reparametrised where that is exact. A key
// bias adds the same value to every score of a query row, which softmax ignores: it is dropped. A
// value bias passes through the attention unchanged (each row of P sums to 1), so it becomes, after
// the output projection, a bias of the output: it is dropped when the output projection has a bias
// (that bias absorbs it) and otherwise becomes the output bias. A query bias b is an input shift:
// (xq + c) w_q = xq w_q + b for c = b w_q^-1 (w_q is invertible in general), so its Weight is
// added to the attention's query input.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/import_context.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

bool is_op(const Graph& g, TensorRef t, OpType type) { return g.node(t.node).op.type == type; }

// `t` is read only by `consumer` (and is not a model output).
bool only_read_by(const Graph& g, TensorRef t, NodeId consumer) {
  const auto uses = g.uses(t);
  return uses.size() == 1 && uses.front().node == consumer;
}

bool is_weight(const Graph& g, TensorRef t) { return is_op(g, t, OpType::Weight); }
// A source with values known at import: a Weight (a buffer exported as an initializer) or a
// Constant (a table computed in the model's forward).
bool is_table(const Graph& g, TensorRef t) {
  return is_weight(g, t) || is_op(g, t, OpType::Constant);
}

// A Linear whose output is `t`, with a 2-D Weight (fuse_at checks its sizes); nullopt otherwise.
struct Projection {
  NodeId linear = -1;
  TensorRef input, weight;
  std::optional<TensorRef> bias;
};

std::optional<Projection> projection(const Graph& g, TensorRef t) {
  const Node& n = g.node(t.node);
  if (n.op.type != OpType::Linear || !is_weight(g, n.inputs[1])) return std::nullopt;
  if (g.shape(n.inputs[1]).sizes().size() != 2) return std::nullopt;
  Projection p{n.id, n.inputs[0], n.inputs[1], std::nullopt};
  if (n.inputs.size() > 2) {
    if (!is_weight(g, n.inputs[2])) return std::nullopt;
    p.bias = n.inputs[2];
  }
  return p;
}

// One of Q, K, V from its projection to the per-head layout the attention reads.
struct HeadPath {
  Projection proj;
  std::vector<NodeId> nodes;  // between the projection and the attention
  double scale = 1.0;
  std::int64_t heads = 0, head_dim = 0, seq = 0;
  // A packed projection (nanoGPT's `q, k, v = c_attn(x).split(e, 2)`): the Split of the [e, 3e]
  // Linear's output, and which of its pieces this path reads.
  NodeId split = -1;
  int piece = -1;
  // Grouped-query attention: each of the projection's heads repeated this many times (see
  // walk_repeat) before the attention reads them.
  std::int64_t repeat = 1;
  // Rotary embeddings on this path (see walk_rotary): the cos and sin tables.
  std::optional<std::pair<TensorRef, TensorRef>> rotary;
};

// The Linear that a packed projection splits: an [e, 3e] Weight and an optional [3e] bias.
std::optional<Projection> packed_projection(const Graph& g, const Node& split) {
  const Ints sizes = split.op.attrs.get_ints("sizes");
  if (split.op.attrs.get_int("axis") != 2 || sizes.size() != 3 || sizes[0] != sizes[1] ||
      sizes[1] != sizes[2] || !only_read_by(g, split.inputs[0], split.id)) {
    return std::nullopt;
  }
  const Node& n = g.node(split.inputs[0].node);
  if (n.op.type != OpType::Linear || !is_weight(g, n.inputs[1])) return std::nullopt;
  if (g.shape(n.inputs[1]).sizes() != Ints{sizes[0], 3 * sizes[0]}) return std::nullopt;
  Projection p{n.id, n.inputs[0], n.inputs[1], std::nullopt};
  if (n.inputs.size() > 2) {
    if (!is_weight(g, n.inputs[2])) return std::nullopt;
    p.bias = n.inputs[2];
  }
  return p;
}

// Composes the Transposes collected walking back from a tensor (last one first): the axis of the
// [n, s, h, d] tensor that each axis of the end tensor holds.
Ints compose(const std::vector<Ints>& perms_backward) {
  Ints labels{0, 1, 2, 3};
  for (auto it = perms_backward.rbegin(); it != perms_backward.rend(); ++it) {
    Ints next(4);
    for (std::size_t i = 0; i < 4; ++i) next[i] = labels[static_cast<std::size_t>((*it)[i])];
    labels = next;
  }
  return labels;
}

// The nodes between `t` ([n, h, s, d], heads on axis 1) and the tensor whose heads it repeats
// (grouped-query attention), and that tensor: Hugging Face's repeat_kv, x[:, :, None] expanded to
// [n, kv, r, s, d] and reshaped to [n, kv * r, s, d], or torch.repeat_interleave as torch exports
// it, the Concat over a Split of the kv heads of each head's [n, 1, 1, s, d] expanded to r. Both
// give query head j the key/value head j / r, as MultiHeadAttention's num_kv_heads does.
struct Repeat {
  TensorRef source;
  std::int64_t times = 1;
  std::vector<NodeId> nodes;
};

// One head group: [n, g, s, d] -> Reshape [n, g, 1, s, d] -> Expand [n, g, r, s, d] -> Reshape
// [n, g * r, s, d], ending at `t`, each tensor read once.
std::optional<Repeat> walk_expanded_heads(const Graph& g, TensorRef t, NodeId consumer) {
  Repeat r;
  const Node* merge = &g.node(t.node);
  if (merge->op.type != OpType::Reshape || !only_read_by(g, t, consumer)) return std::nullopt;
  const TensorRef expanded = merge->inputs[0];
  const Node& expand = g.node(expanded.node);
  if (expand.op.type != OpType::Expand || !only_read_by(g, expanded, merge->id))
    return std::nullopt;
  const TensorRef unsqueezed = expand.inputs[0];
  const Node& unsqueeze = g.node(unsqueezed.node);
  if (unsqueeze.op.type != OpType::Reshape || !only_read_by(g, unsqueezed, expand.id))
    return std::nullopt;
  const Ints out = g.shape(t).sizes(), big = g.shape(expanded).sizes();
  const Ints small = g.shape(unsqueezed).sizes(), in = g.shape(unsqueeze.inputs[0]).sizes();
  if (in.size() != 4 || small != Ints{in[0], in[1], 1, in[2], in[3]} ||
      big != Ints{in[0], in[1], big[2], in[2], in[3]} ||
      out != Ints{in[0], in[1] * big[2], in[2], in[3]}) {
    return std::nullopt;
  }
  r.source = unsqueeze.inputs[0];
  r.times = big[2];
  r.nodes = {merge->id, expand.id, unsqueeze.id};
  return r;
}

std::optional<Repeat> walk_repeat(const Graph& g, TensorRef t, NodeId consumer) {
  if (auto direct = walk_expanded_heads(g, t, consumer)) return direct;
  const Node& concat = g.node(t.node);
  if (concat.op.type != OpType::Concat || concat.op.attrs.get_int("axis") != 1 ||
      concat.op.attrs.get_int("pieces", 1) != 1 || !only_read_by(g, t, consumer)) {
    return std::nullopt;
  }
  Repeat r;
  r.nodes.push_back(concat.id);
  NodeId split = -1;
  for (std::size_t i = 0; i < concat.inputs.size(); ++i) {
    auto group = walk_expanded_heads(g, concat.inputs[i], concat.id);
    if (!group || (i > 0 && group->times != r.times)) return std::nullopt;
    r.times = group->times;
    const Node& piece = g.node(group->source.node);
    if (piece.op.type != OpType::Split || group->source.index != static_cast<int>(i) ||
        (split >= 0 && piece.id != split) || !only_read_by(g, group->source, group->nodes.back())) {
      return std::nullopt;
    }
    split = piece.id;
    r.nodes.insert(r.nodes.end(), group->nodes.begin(), group->nodes.end());
  }
  const Node& pieces = g.node(split);
  const Ints sizes = pieces.op.attrs.get_ints("sizes");
  if (pieces.op.attrs.get_int("axis") != 1 || sizes.size() != concat.inputs.size() ||
      std::any_of(sizes.begin(), sizes.end(), [](std::int64_t s) { return s != 1; }) ||
      !only_read_by(g, pieces.inputs[0], split)) {
    return std::nullopt;
  }
  r.nodes.push_back(split);
  r.source = pieces.inputs[0];
  return r;
}

// Rotary embeddings as Llama's and GPT-NeoX's code writes them on x [n, h, s, d]:
//   x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x2, x1) of x's halves (chunk(2, -1)),
// in our operators Add(Mul(x, cos), Mul(Concat(ScalarMul(-1, x2), x1; axis 3), sin)) with x1, x2
// the pieces of a Split of x along axis 3 and cos, sin Weights [.., s, d]. Ending at `t`; the
// tables are checked against the rotation's definition by fuse_at.
struct Rotary {
  TensorRef source, cos, sin;
  std::vector<NodeId> nodes;
};

std::optional<Rotary> walk_rotary(const Graph& g, TensorRef t, NodeId consumer) {
  const Node& add = g.node(t.node);
  if (add.op.type != OpType::Add || !only_read_by(g, t, consumer)) return std::nullopt;
  // A Mul (read only by the Add) of a tensor by a Weight.
  struct Scaled {
    NodeId mul;
    TensorRef x, table;
  };
  auto scaled = [&](TensorRef m) -> std::optional<Scaled> {
    const Node& mul = g.node(m.node);
    if (mul.op.type != OpType::Mul || !only_read_by(g, m, add.id)) return std::nullopt;
    for (std::size_t side = 0; side < 2; ++side) {
      if (is_table(g, mul.inputs[side]))
        return Scaled{mul.id, mul.inputs[1 - side], mul.inputs[side]};
    }
    return std::nullopt;
  };
  for (std::size_t side = 0; side < 2; ++side) {
    const auto straight = scaled(add.inputs[side]);
    const auto rotated = scaled(add.inputs[1 - side]);
    if (!straight || !rotated) continue;
    const TensorRef x = straight->x;
    const Node& cat = g.node(rotated->x.node);
    if (cat.op.type != OpType::Concat || cat.inputs.size() != 2 ||
        cat.op.attrs.get_int("axis") != 3 || cat.op.attrs.get_int("pieces", 1) != 1 ||
        !only_read_by(g, rotated->x, rotated->mul)) {
      continue;
    }
    const Node& neg = g.node(cat.inputs[0].node);
    if (neg.op.type != OpType::ScalarMul || neg.op.attrs.get_double("scalar") != -1.0 ||
        !only_read_by(g, cat.inputs[0], cat.id)) {
      continue;
    }
    const TensorRef x2 = neg.inputs[0], x1 = cat.inputs[1];
    const Node& split = g.node(x1.node);
    const Ints d = g.shape(x).sizes();
    if (d.size() != 4 || d[3] % 2 != 0 || split.op.type != OpType::Split || x2.node != split.id ||
        x1.index != 0 || x2.index != 1 || split.inputs[0] != x ||
        split.op.attrs.get_int("axis") != 3 ||
        split.op.attrs.get_ints("sizes") != Ints{d[3] / 2, d[3] / 2} ||
        !only_read_by(g, x1, cat.id) || !only_read_by(g, x2, neg.id)) {
      continue;
    }
    // x itself is read by the straight Mul and the Split only.
    const auto uses = g.uses(x);
    if (uses.size() != 2 || !std::all_of(uses.begin(), uses.end(), [&](const Use& u) {
          return u.node == straight->mul || u.node == split.id;
        })) {
      continue;
    }
    return Rotary{x,
                  straight->table,
                  rotated->table,
                  {add.id, straight->mul, rotated->mul, cat.id, neg.id, split.id}};
  }
  return std::nullopt;
}

// Walks back from the per-head tensor `t` (read by `consumer`) through ScalarMuls, Transposes and
// the one Reshape [n, s, e] -> [n, s, h, d] to the projection. `layout` is where the end tensor
// must hold the [n, s, h, d] axes.
std::optional<HeadPath> walk_head_path(const Graph& g, TensorRef t, NodeId consumer,
                                       const Ints& layout) {
  HeadPath path;
  std::vector<Ints> perms;
  bool reshaped = false;
  // The rotation and the repeat act on [n, h, s, d] (heads on axis 1, positions on axis 2): the
  // Transposes between them and the Reshape to heads must compose to that layout.
  std::optional<std::size_t> needs_heads_layout;
  for (;;) {
    if (!reshaped && !path.rotary && path.repeat == 1) {
      if (auto repeat = walk_repeat(g, t, consumer)) {
        path.repeat = repeat->times;
        path.nodes.insert(path.nodes.end(), repeat->nodes.begin(), repeat->nodes.end());
        needs_heads_layout = perms.size();
        consumer = repeat->nodes.back();
        t = repeat->source;
        continue;
      }
    }
    if (!reshaped && !path.rotary) {
      if (auto rotary = walk_rotary(g, t, consumer)) {
        if (needs_heads_layout && *needs_heads_layout != perms.size()) return std::nullopt;
        path.rotary = std::pair{rotary->cos, rotary->sin};
        path.nodes.insert(path.nodes.end(), rotary->nodes.begin(), rotary->nodes.end());
        needs_heads_layout = perms.size();
        // x is read by two of the rotation's nodes; the walk goes on from x's producer.
        const Node& producer = g.node(rotary->source.node);
        if (g.uses(producer.id).size() != 2) return std::nullopt;
        path.nodes.push_back(producer.id);
        if (producer.op.type != OpType::Transpose) return std::nullopt;
        const Ints perm = producer.op.attrs.get_ints("perm");
        if (perm.size() != 4) return std::nullopt;
        perms.push_back(perm);
        consumer = producer.id;
        t = producer.inputs[0];
        continue;
      }
    }
    if (!only_read_by(g, t, consumer)) return std::nullopt;
    const Node& n = g.node(t.node);
    if (n.op.type == OpType::ScalarMul) {
      path.scale *= n.op.attrs.get_double("scalar");
    } else if (n.op.type == OpType::Transpose && !reshaped) {
      const Ints perm = n.op.attrs.get_ints("perm");
      if (perm.size() != 4) return std::nullopt;
      perms.push_back(perm);
    } else if (n.op.type == OpType::Reshape && !reshaped) {
      const Ints in = g.shape(n.inputs[0]).sizes();
      const Ints out = g.shape(n.output()).sizes();
      if (in.size() != 3 || out.size() != 4 || in[0] != out[0] || in[1] != out[1] ||
          out[2] * out[3] != in[2]) {
        return std::nullopt;
      }
      path.seq = out[1];
      path.heads = out[2];
      path.head_dim = out[3];
      reshaped = true;
    } else if (n.op.type == OpType::Linear && reshaped) {
      auto p = projection(g, t);
      if (!p) return std::nullopt;
      path.proj = *p;
      break;
    } else if (n.op.type == OpType::Split && reshaped) {
      auto p = packed_projection(g, n);
      if (!p) return std::nullopt;
      path.proj = *p;
      path.split = n.id;
      path.piece = t.index;
      break;
    } else {
      return std::nullopt;
    }
    path.nodes.push_back(n.id);
    consumer = n.id;
    t = n.inputs[0];
  }
  if (compose(perms) != layout) return std::nullopt;
  if (needs_heads_layout &&
      compose({perms.begin() + static_cast<std::ptrdiff_t>(*needs_heads_layout), perms.end()}) !=
          Ints{0, 2, 1, 3}) {
    return std::nullopt;
  }
  return path;
}

// From the attention's output [n, h, s, d] forward to the output projection.
struct OutputPath {
  Projection proj;
  std::vector<NodeId> nodes;
};

std::optional<OutputPath> walk_output_path(const Graph& g, TensorRef t) {
  OutputPath path;
  std::vector<Ints> perms;
  for (;;) {
    const auto uses = g.uses(t);
    if (uses.size() != 1) return std::nullopt;
    const Node& n = g.node(uses.front().node);
    if (n.op.type == OpType::Transpose) {
      const Ints perm = n.op.attrs.get_ints("perm");
      if (perm.size() != 4) return std::nullopt;
      perms.insert(perms.begin(), perm);  // compose() wants the last one first
    } else if (n.op.type == OpType::Reshape) {
      const Ints in = g.shape(n.inputs[0]).sizes();
      const Ints out = g.shape(n.output()).sizes();
      // [n, s, h, d] -> [n, s, h * d]
      if (in.size() != 4 || out.size() != 3 || out[0] != in[0] || out[1] != in[1] ||
          out[2] != in[2] * in[3] || compose(perms) != Ints{0, 2, 1, 3}) {
        return std::nullopt;
      }
      path.nodes.push_back(n.id);
      const auto next = g.uses(n.output());
      if (next.size() != 1 || next.front().slot != 0) return std::nullopt;
      auto p = projection(g, g.node(next.front().node).output());
      if (!p) return std::nullopt;
      path.proj = *p;
      return path;
    } else {
      return std::nullopt;
    }
    path.nodes.push_back(n.id);
    t = n.output();
  }
}

// Rotary embeddings' base when `cos` and `sin` (Weights [.., s, d], leading dims 1) hold the
// half-split tables of positions 0..s-1: cos(p / base^(2i / d)) at [p, i] and [p, i + d/2] (sin
// likewise). The base is read off position 1 and every entry checked; nullopt when they are not
// such tables (the attention then stays in pieces). The default base when the tables do not tell
// (one position, or heads of size 2).
constexpr double kDefaultRotaryBase = 10000.0;

std::optional<double> rotary_base(ImportContext& ctx, TensorRef cos, TensorRef sin,
                                  std::int64_t seq, std::int64_t d) {
  const Graph& g = ctx.graph();
  const std::string& cos_name = g.node(cos.node).op.name;
  const std::string& sin_name = g.node(sin.node).op.name;
  if (!ctx.is_constant(cos_name) || !ctx.is_constant(sin_name)) return std::nullopt;
  const ConstTensor& c = ctx.constant(cos_name);
  const ConstTensor& s = ctx.constant(sin_name);
  if (c.dims.size() < 2 || c.dims != s.dims || c.dims[c.dims.size() - 2] != seq ||
      c.dims.back() != d || c.numel() != seq * d) {
    return std::nullopt;
  }
  const std::int64_t half = d / 2;
  double base = kDefaultRotaryBase;
  if (seq > 1 && half > 1) {
    // Position 1, pair 1: the angle 1 / base^(2 / d).
    const double angle = std::atan2(s.as_double(d + 1), c.as_double(d + 1));
    if (!(angle > 0 && angle < 1)) return std::nullopt;
    base = std::pow(angle, -static_cast<double>(d) / 2.0);
    // As published (10000, 500000, 1e6): the tables hold the angles in float.
    const double rounded = std::round(base);
    if (std::abs(base - rounded) <= 1e-3 * base) base = rounded;
    const double magnitude = std::pow(10.0, std::floor(std::log10(base)) - 2);
    if (std::abs(base - std::round(base / magnitude) * magnitude) <= 1e-3 * base)
      base = std::round(base / magnitude) * magnitude;
  }
  for (std::int64_t p = 0; p < seq; ++p) {
    for (std::int64_t i = 0; i < d; ++i) {
      const double angle =
          static_cast<double>(p) *
          std::pow(base, -2.0 * static_cast<double>(i % half) / static_cast<double>(d));
      // float32 tables of angles up to the context length: 1e-3 is far above their rounding and
      // far below any other table's difference.
      if (std::abs(c.as_double(p * d + i) - std::cos(angle)) > 1e-3 ||
          std::abs(s.as_double(p * d + i) - std::sin(angle)) > 1e-3) {
        return std::nullopt;
      }
    }
  }
  return base;
}

// The fused operator's name: the module path its projections share ("/blocks.0/attn/q/MatMul"
// and "/blocks.0/attn/proj/MatMul" -> "/blocks.0/attn/MultiHeadAttention").
std::string fused_name(const std::string& a, const std::string& b) {
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  const auto slash = a.rfind('/', common == 0 ? 0 : common - 1);
  if (common == 0 || slash == std::string::npos) return a + ".attention";
  return a.substr(0, slash + 1) + "MultiHeadAttention";
}

// Fuses the attention whose softmax is `softmax`; returns false, changing nothing, when the
// nodes around it are not the form above.
bool fuse_at(ImportContext& ctx, NodeId softmax) {
  Graph& g = ctx.graph();
  const Node& sm = g.node(softmax);
  const Ints sm_sizes = g.shape(sm.output()).sizes();
  if (sm_sizes.size() != 4 || sm.op.attrs.get_int("axis") != 3) return false;
  std::vector<NodeId> nodes{softmax};
  std::vector<NodeId> dropped_weights;

  // [mask], scale, Q K^T
  TensorRef scores = sm.inputs[0];
  NodeId consumer = softmax;
  bool causal = false;
  if (!only_read_by(g, scores, consumer)) return false;
  if (is_op(g, scores, OpType::Add)) {
    const Node& add = g.node(scores.node);
    int mask_side = -1;
    for (int side = 0; side < 2; ++side) {
      if (ctx.is_causal_mask(add.inputs[static_cast<std::size_t>(side)].node)) mask_side = side;
    }
    if (mask_side < 0) return false;  // an Add of anything but a causal mask
    const TensorRef mask = add.inputs[static_cast<std::size_t>(mask_side)];
    const Ints mask_sizes = g.shape(mask).sizes();
    if (mask_sizes.size() < 2 || mask_sizes[mask_sizes.size() - 1] != sm_sizes[3] ||
        mask_sizes[mask_sizes.size() - 2] != sm_sizes[2]) {
      return false;
    }
    causal = true;
    dropped_weights.push_back(mask.node);
    nodes.push_back(add.id);
    consumer = add.id;
    scores = add.inputs[static_cast<std::size_t>(1 - mask_side)];
  }
  double scale = 1.0;
  while (is_op(g, scores, OpType::ScalarMul) && only_read_by(g, scores, consumer)) {
    const Node& mul = g.node(scores.node);
    scale *= mul.op.attrs.get_double("scalar");
    nodes.push_back(mul.id);
    consumer = mul.id;
    scores = mul.inputs[0];
  }
  if (!is_op(g, scores, OpType::BatchMatMul) || !only_read_by(g, scores, consumer)) return false;
  const Node& qk = g.node(scores.node);
  nodes.push_back(qk.id);
  const auto q = walk_head_path(g, qk.inputs[0], qk.id, {0, 2, 1, 3});
  const auto k = walk_head_path(g, qk.inputs[1], qk.id, {0, 2, 3, 1});
  if (!q || !k) return false;

  // P V, then the output projection
  const auto p_uses = g.uses(sm.output());
  if (p_uses.size() != 1 || p_uses.front().slot != 0) return false;
  const Node& pv = g.node(p_uses.front().node);
  if (pv.op.type != OpType::BatchMatMul) return false;
  nodes.push_back(pv.id);
  const auto v = walk_head_path(g, pv.inputs[1], pv.id, {0, 2, 1, 3});
  const auto out = walk_output_path(g, pv.output());
  if (!v || !out || v->scale != 1.0) return false;

  const std::int64_t heads = q->heads, head_dim = q->head_dim, width = heads * head_dim;
  const std::int64_t kv_heads = k->heads, kv_width = kv_heads * head_dim;
  const std::int64_t e = g.shape(out->proj.weight).sizes()[1];
  if (q->repeat != 1 || k->repeat != v->repeat || heads != kv_heads * k->repeat) return false;
  for (const HeadPath* path : {&*k, &*v}) {
    if (path->heads != kv_heads || path->head_dim != head_dim) return false;
  }
  // Rotary embeddings: on the queries and the keys, by the same tables.
  if (v->rotary || q->rotary.has_value() != k->rotary.has_value() ||
      (q->rotary && q->rotary != k->rotary)) {
    return false;
  }
  std::optional<double> base;
  if (q->rotary) {
    base = rotary_base(ctx, q->rotary->first, q->rotary->second, q->seq, head_dim);
    if (!base || k->seq != q->seq) return false;
  }
  if (k->seq != v->seq || (causal && q->seq != k->seq)) return false;
  // Separate projections, or the three pieces of one packed projection in torch's q, k, v order.
  const bool packed = q->split >= 0;
  if (packed && (k->split != q->split || v->split != q->split || q->piece != 0 || k->piece != 1 ||
                 v->piece != 2)) {
    return false;
  }
  if (!packed && (k->split >= 0 || v->split >= 0)) return false;
  if (packed) {
    for (const Projection* p : {&q->proj, &k->proj, &v->proj, &out->proj})
      if (g.shape(p->weight).sizes() != Ints{e, p != &out->proj ? 3 * e : e}) return false;
    if (width != e || kv_width != e) return false;
  } else if (g.shape(q->proj.weight).sizes() != Ints{e, width} ||
             g.shape(k->proj.weight).sizes() != Ints{e, kv_width} ||
             g.shape(v->proj.weight).sizes() != Ints{e, kv_width} ||
             g.shape(out->proj.weight).sizes() != Ints{width, e} ||
             g.shape(k->proj.input).sizes().back() != e) {
    return false;
  }
  std::set<NodeId> projections{q->proj.linear, k->proj.linear, v->proj.linear, out->proj.linear};
  if (projections.size() != (packed ? 2u : 4u)) return false;
  // MultiHeadAttention scales the scores by 1/sqrt(d), as torch does.
  scale *= q->scale * k->scale;
  if (std::abs(scale * std::sqrt(static_cast<double>(head_dim)) - 1.0) > 1e-3) return false;
  // A query bias is an input shift only through a square w_q.
  if (q->proj.bias && width != e) return false;

  const std::string name =
      fused_name(g.node(q->proj.linear).op.name, g.node(out->proj.linear).op.name);
  // The weights and the biases kept; a packed projection's are cut into per-projection Weights
  // (same parameters) named after the packed ones.
  TensorRef wq = q->proj.weight, wk = k->proj.weight, wv = v->proj.weight;
  std::optional<TensorRef> bq = q->proj.bias, bv = v->proj.bias;
  if (packed) {
    const std::string w = g.node(wq.node).op.name;
    wq = g.add_weight(w + ".q", {e, e});
    wk = g.add_weight(w + ".k", {e, e});
    wv = g.add_weight(w + ".v", {e, e});
    if (q->proj.bias) {
      const std::string b = g.node(q->proj.bias->node).op.name;
      bq = g.add_weight(b + ".q", {e});
      bv = out->proj.bias ? std::nullopt : std::optional(g.add_weight(b + ".v", {e}));
    }
  }
  // A value bias of the key/value heads' width becomes an output bias of its own (the same
  // reparametrisation: it passes through the attention and then w_o).
  if (bv && !out->proj.bias && kv_width != e)
    bv = g.add_weight(g.node(bv->node).op.name + ".output", {e});
  TensorRef query = q->proj.input;
  if (bq) query = ctx.add(OpType::Add, {}, {query, *bq}, name + ".query_shift");
  // Attributes at their defaults are left out, as GraphBuilder::multi_head_attention does.
  Attributes attrs{{"num_heads", heads}};
  if (kv_heads != heads) attrs.set("num_kv_heads", kv_heads);
  if (width != e) attrs.set("head_dim", head_dim);
  if (base) {
    attrs.set("rotary", std::int64_t{1});
    if (*base != kDefaultRotaryBase) attrs.set("rotary_base", *base);
  }
  if (causal) attrs.set("causal", std::int64_t{1});
  TensorRef result =
      ctx.add(OpType::MultiHeadAttention, std::move(attrs),
              {query, k->proj.input, v->proj.input, wq, wk, wv, out->proj.weight}, name);
  std::optional<TensorRef> out_bias = out->proj.bias ? out->proj.bias : bv;
  if (out_bias) result = ctx.add(OpType::Add, {}, {result, *out_bias}, name + ".bias");
  g.replace_uses(g.node(out->proj.linear).output(), result);

  // Everything the attention replaced, then the Weights only it read (the mask, and the key and
  // value biases it dropped).
  for (const auto& list : {nodes, q->nodes, k->nodes, v->nodes, out->nodes})
    dropped_weights.insert(dropped_weights.end(), list.begin(), list.end());
  if (packed) dropped_weights.push_back(q->split);
  for (NodeId id : projections) dropped_weights.push_back(id);
  for (const Projection* p : {&q->proj, &k->proj, &v->proj}) {
    dropped_weights.push_back(p->weight.node);
    if (p->bias) dropped_weights.push_back(p->bias->node);
  }
  if (q->rotary) {  // the tables, once no other attention reads them
    dropped_weights.push_back(q->rotary->first.node);
    dropped_weights.push_back(q->rotary->second.node);
  }
  for (bool removed = true; removed;) {
    removed = false;
    for (NodeId id : dropped_weights) {
      if (g.contains(id) && g.uses(id).empty()) {
        g.remove(id);
        removed = true;
      }
    }
  }
  return true;
}

}  // namespace

void fuse_attention(ImportContext& ctx) {
  std::vector<NodeId> softmaxes;
  for (const auto& [id, node] : ctx.graph().nodes()) {
    if (node.op.type == OpType::Softmax) softmaxes.push_back(id);
  }
  for (NodeId id : softmaxes) fuse_at(ctx, id);
}

}  // namespace unity::onnxio
