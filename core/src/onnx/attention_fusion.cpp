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
#include <cmath>
#include <optional>
#include <set>

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

// A Linear whose output is `t`, with an [e, e] Weight; nullopt otherwise.
struct Projection {
  NodeId linear = -1;
  TensorRef input, weight;
  std::optional<TensorRef> bias;
};

std::optional<Projection> projection(const Graph& g, TensorRef t) {
  const Node& n = g.node(t.node);
  if (n.op.type != OpType::Linear || !is_weight(g, n.inputs[1])) return std::nullopt;
  const Ints w = g.shape(n.inputs[1]).sizes();
  if (w.size() != 2 || w[0] != w[1]) return std::nullopt;
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

// Walks back from the per-head tensor `t` (read by `consumer`) through ScalarMuls, Transposes and
// the one Reshape [n, s, e] -> [n, s, h, d] to the projection. `layout` is where the end tensor
// must hold the [n, s, h, d] axes.
std::optional<HeadPath> walk_head_path(const Graph& g, TensorRef t, NodeId consumer,
                                       const Ints& layout) {
  HeadPath path;
  std::vector<Ints> perms;
  bool reshaped = false;
  for (;;) {
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

  const std::int64_t heads = q->heads, head_dim = q->head_dim, e = heads * head_dim;
  for (const HeadPath* path : {&*k, &*v}) {
    if (path->heads != heads || path->head_dim != head_dim) return false;
  }
  if (k->seq != v->seq || (causal && q->seq != k->seq)) return false;
  // Separate projections, or the three pieces of one packed projection in torch's q, k, v order.
  const bool packed = q->split >= 0;
  if (packed && (k->split != q->split || v->split != q->split || q->piece != 0 || k->piece != 1 ||
                 v->piece != 2)) {
    return false;
  }
  if (!packed && (k->split >= 0 || v->split >= 0)) return false;
  for (const Projection* p : {&q->proj, &k->proj, &v->proj, &out->proj}) {
    if (g.shape(p->weight).sizes() != Ints{e, packed && p != &out->proj ? 3 * e : e}) return false;
  }
  std::set<NodeId> projections{q->proj.linear, k->proj.linear, v->proj.linear, out->proj.linear};
  if (projections.size() != (packed ? 2u : 4u)) return false;
  // MultiHeadAttention scales the scores by 1/sqrt(d), as torch does.
  scale *= q->scale * k->scale;
  if (std::abs(scale * std::sqrt(static_cast<double>(head_dim)) - 1.0) > 1e-3) return false;

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
  TensorRef query = q->proj.input;
  if (bq) query = ctx.add(OpType::Add, {}, {query, *bq}, name + ".query_shift");
  Attributes attrs{{"num_heads", heads}};
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
