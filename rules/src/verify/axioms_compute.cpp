// How each compute operator parallelises (the parallelisation properties of paper section 4): along
// which dims a Partition, Combine, Pipeline or Batch passes through it, which inputs must then be
// replicated, which dims leave partial sums for a Reduce, and which operators commute with
// Replicate and Reduce. Guards name the dims by rank so that one axiom holds for inputs of every
// rank.
#include <functional>

#include <fmt/format.h>

#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {
namespace {

using M = Axiom::Mode;
using O = OpType;
using DimOp = std::function<E(const E&, const E&, const E&)>;

struct Ctx {
  Theory& th;
  void add(std::string name, M mode, E lhs, E rhs, E guard = E()) {
    th.axioms.push_back(
        {std::move(name), mode, std::move(lhs), std::move(rhs), std::move(guard), E()});
  }
};

const E x = tvar("x"), y = tvar("y"), z = tvar("z"), w = tvar("w"), b = tvar("b");
const E k = ivar("k"), d = ivar("d");

std::vector<std::pair<std::string, DimOp>> dim_ops() {
  return {{"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
}

E app_attrs(O op, const std::vector<E>& args, std::map<std::string, E>& attrs, int output = 0) {
  return with_attr_vars(op, args, "a_", attrs, output);
}

void unary_axioms(Ctx& c, O op) {
  const std::string n(to_string(op));
  std::map<std::string, E> attrs;
  auto u = [&](const E& arg) { return app_attrs(op, {arg}, attrs); };
  u(x);
  E guard;
  if (op == O::Softmax || axis_function(op))  // the axis is read whole: split the others
    guard = norm(k, rank(x)) != norm(attrs.at("axis"), rank(x)) || d == 1;
  if (op == O::Pool2D) guard = (norm(k, rank(x)) < 2) || d == 1;  // spatial splits: one way only
  for (const auto& [fn, f] : dim_ops()) {
    c.add(n + "_" + fn, M::Both, u(f(k, d, x)), f(k, d, u(x)), guard);
    if (op == O::Pool2D && (fn == "partition"))
      c.add(n + "_" + fn + "_spatial", M::Forward, u(f(k, d, x)), f(k, d, u(x)));
  }
  c.add(n + "_replicate", M::Both, u(R(d, x)), R(d, u(x)));
  const PointwiseFunction* pointwise = pointwise_function(op);
  const bool linear = pointwise && pointwise->linear;
  if (linear || op == O::Pool2D) {
    // Linear operators sum partial results like whole ones (average pooling is linear; max
    // pooling reads no partial sums, so for it these never apply).
    const E avg = op == O::Pool2D ? E(attrs.at("pool") == 1) : E();
    c.add(n + "_reduce", M::Both, u(Red(d, x)), Red(d, u(x)), avg);
    c.add(n + "_allreduce", M::Both, u(AR(d, x)), AR(d, u(x)), avg);
  }
}

void unary_axioms(Ctx& c) {
  for (O op : first_theory_unary_ops()) unary_axioms(c, op);
  unary_axioms(c, O::Softmax);
  unary_axioms(c, O::Pool2D);
}

void binary_axioms(Ctx& c) {
  const E k2 = ivar("k2");
  for (O op : {O::Add, O::Sub, O::Mul, O::Div}) {
    const std::string n(to_string(op));
    auto bop = [&](const E& l, const E& r) { return app(op, {}, {l, r}); };
    // The two splits name the same dim counted from the end, as broadcasting aligns dims.
    const E aligned = ilit(0) <= norm(k, rank(x)) && ilit(0) <= norm(k2, rank(y)) &&
                      norm(k, rank(x)) - rank(x) == norm(k2, rank(y)) - rank(y);
    const E out = bop(x, y);
    // The output dim aligned with operand t's dim k, and operand t's dim aligned with output dim k.
    auto to_out = [&](const E& t) { return norm(k, rank(t)) - rank(t) + rank(out); };
    auto to_in = [&](const E& t) { return norm(k, rank(out)) - rank(out) + rank(t); };
    for (const auto& [fn, f] : dim_ops()) {
      c.add(n + "_" + fn, M::Forward, bop(f(k, d, x), f(k2, d, y)), f(to_out(x), d, out), aligned);
      // Back only where both operands have the dim with one size (no broadcasting there).
      c.add(n + "_" + fn + "_back", M::Forward, f(k, d, out),
            bop(f(to_in(x), d, x), f(to_in(y), d, y)),
            ilit(0) <= norm(k, rank(out)) && ilit(0) <= to_in(x) && ilit(0) <= to_in(y) &&
                size(x, to_in(x)) == size(y, to_in(y)));
      // Degrees are layout: where both sides are defined they hold the same values, whatever the
      // ranks (micro-batches change sizes, and with them what broadcasts).
      if (fn == "partition" || fn == "combine")
        c.add(n + "_" + fn + "_defined", M::Joint, bop(f(k, d, x), f(k, d, y)), f(k, d, out));
    }
    // A split of a dim the other operand broadcasts along (it lacks it, or has size 1 there) needs
    // one copy of that operand per piece; micro-batches need none.
    auto broadcast = [&](const E& me, const E& other) {
      const E nk = norm(k, rank(me));
      const E jo = nk - rank(me) + rank(other);
      return ilit(0) <= nk && nk < rank(me) && (jo < 0 || size(other, jo) == 1);
    };
    const E broadcast_x = broadcast(x, y), broadcast_y = broadcast(y, x);
    c.add(n + "_partition_broadcast_right", M::Forward, bop(P(k, d, x), R(d, y)),
          P(k, d, bop(x, y)), broadcast_x);
    c.add(n + "_partition_broadcast_left", M::Forward, bop(R(d, x), P(k, d, y)), P(k, d, bop(x, y)),
          broadcast_y);
    c.add(n + "_combine_broadcast_right", M::Forward, bop(C(k, d, x), y), C(k, d, bop(x, R(d, y))),
          broadcast_x);
    c.add(n + "_combine_broadcast_left", M::Forward, bop(x, C(k, d, y)), C(k, d, bop(R(d, x), y)),
          broadcast_y);
    for (const auto& [fn, f] : dim_ops()) {
      if (fn != "pipeline" && fn != "batch") continue;
      c.add(n + "_" + fn + "_broadcast_right", M::Forward, bop(f(k, d, x), y), f(k, d, bop(x, y)),
            broadcast_x);
      c.add(n + "_" + fn + "_broadcast_left", M::Forward, bop(x, f(k, d, y)), f(k, d, bop(x, y)),
            broadcast_y);
    }
    c.add(n + "_replicate", M::Joint, bop(R(d, x), R(d, y)), R(d, bop(x, y)));
    if (op == O::Add || op == O::Sub) {
      c.add(n + "_reduce", M::Joint, bop(Red(d, x), Red(d, y)), Red(d, bop(x, y)));
      c.add(n + "_allreduce", M::Joint, bop(AR(d, x), AR(d, y)), AR(d, bop(x, y)));
    } else {
      // A partial sum times (or over) a whole value.
      c.add(n + "_reduce_left", M::Joint, bop(Red(d, x), y), Red(d, bop(x, R(d, y))));
      c.add(n + "_allreduce_left", M::Joint, bop(AR(d, x), y), AR(d, bop(x, y)));
      if (op == O::Mul) {
        c.add(n + "_reduce_right", M::Joint, bop(x, Red(d, y)), Red(d, bop(R(d, x), y)));
        c.add(n + "_allreduce_right", M::Joint, bop(x, AR(d, y)), AR(d, bop(x, y)));
      }
    }
  }
}

// `k` names dim `i` of tensor t (negative dims count from the end). Axioms take dims as variables
// with such guards, so that they match a rule whichever way it writes a dim.
E is_dim(const E& k, const E& t, const E& i) { return norm(k, rank(t)) == i; }
E last_of(const E& t) { return rank(t) - 1; }

// Linear, MatMul and BatchMatMul: sample-like dims, output columns, and the reduction dim.
void dense_axioms(Ctx& c) {
  const E kw = ivar("kw"), kb = ivar("kb"), kx = ivar("kx");
  for (int arity : {2, 3}) {
    const std::string n = arity == 2 ? "linear" : "linear_bias";
    std::map<std::string, E> attrs;
    auto lin = [&](const E& xx, const E& ww, const E& bb) {
      return app_attrs(O::Linear, arity == 2 ? std::vector<E>{xx, ww} : std::vector<E>{xx, ww, bb},
                       attrs);
    };
    lin(x, w, b);
    // A bias splits like the output columns; without a bias its guard is void.
    const E bias_dim = arity == 3 ? is_dim(kb, b, 0) : blit(true);
    auto bias = [&](const E& e) { return arity == 3 ? e : b; };
    const E sample = ilit(0) <= norm(k, rank(x)) && norm(k, rank(x)) < rank(x) - 1;
    c.add(n + "_sample_partition", M::Both, lin(P(k, d, x), R(d, w), R(d, b)),
          P(k, d, lin(x, w, b)), sample);
    c.add(n + "_sample_combine", M::Both, lin(C(k, d, x), w, b), C(k, d, lin(x, R(d, w), R(d, b))),
          sample);
    c.add(n + "_sample_pipeline", M::Both, lin(Pipe(k, d, x), w, b), Pipe(k, d, lin(x, w, b)),
          sample);
    c.add(n + "_sample_batch", M::Both, lin(Bat(k, d, x), w, b), Bat(k, d, lin(x, w, b)), sample);
    c.add(n + "_output_partition", M::Forward, lin(R(d, x), P(kw, d, w), bias(P(kb, d, b))),
          P(last_of(x), d, lin(x, w, b)), is_dim(kw, w, 1) && bias_dim);
    c.add(n + "_output_partition_back", M::Forward, P(k, d, lin(x, w, b)),
          lin(R(d, x), P(1, d, w), bias(P(0, d, b))), is_dim(k, x, last_of(x)));
    c.add(n + "_output_combine", M::Forward, lin(x, C(kw, d, w), bias(C(kb, d, b))),
          C(last_of(x), d, lin(R(d, x), w, b)), is_dim(kw, w, 1) && bias_dim);
    c.add(n + "_output_combine_back", M::Forward, C(k, d, lin(R(d, x), w, b)),
          lin(x, C(1, d, w), bias(C(0, d, b))), is_dim(k, x, last_of(x)));
    const E none = attrs.at("activation") == 0;
    c.add(n + "_reduction_partition", M::Forward, Red(d, lin(P(kx, d, x), P(kw, d, w), R(d, b))),
          lin(x, w, b), none && is_dim(kx, x, last_of(x)) && is_dim(kw, w, 0));
    c.add(n + "_reduction_combine", M::Forward, lin(C(kx, d, x), C(kw, d, w), b),
          Red(d, lin(x, w, R(d, b))), none && is_dim(kx, x, last_of(x)) && is_dim(kw, w, 0));
    c.add(n + "_reduction_combine_back", M::Forward, Red(d, lin(x, w, R(d, b))),
          lin(C(last_of(x), d, x), C(0, d, w), b), none);
  }
  const E ky = ivar("ky");
  for (O op : {O::MatMul, O::BatchMatMul}) {
    const std::string n(to_string(op));
    auto mm = [&](const E& a, const E& bb) { return app(op, {}, {a, bb}); };
    const E nk = norm(k, rank(x));
    // Rows of a (and its batch dims when b is shared) with b replicated; batch dims of batched
    // operands split alike.
    const E rows = ilit(0) <= nk && ((rank(y) == 2 && nk < rank(x) - 1) || nk == rank(x) - 2);
    const E batch = ilit(0) <= nk && rank(y) == rank(x) && nk < rank(x) - 2;
    c.add(n + "_rows_partition", M::Both, mm(P(k, d, x), R(d, y)), P(k, d, mm(x, y)), rows);
    c.add(n + "_rows_combine", M::Both, mm(C(k, d, x), y), C(k, d, mm(x, R(d, y))), rows);
    c.add(n + "_batch_partition", M::Both, mm(P(k, d, x), P(k, d, y)), P(k, d, mm(x, y)), batch);
    c.add(n + "_batch_combine", M::Both, mm(C(k, d, x), C(k, d, y)), C(k, d, mm(x, y)), batch);
    if (op == O::MatMul)
      c.add(n + "_rows_pipeline", M::Both, mm(Pipe(k, d, x), y), Pipe(k, d, mm(x, y)),
            rows && rank(y) == 2);
    c.add(n + "_columns_partition", M::Forward, mm(R(d, x), P(ky, d, y)),
          P(last_of(x), d, mm(x, y)), is_dim(ky, y, last_of(y)));
    c.add(n + "_columns_partition_back", M::Forward, P(k, d, mm(x, y)),
          mm(R(d, x), P(last_of(y), d, y)), is_dim(k, x, last_of(x)));
    c.add(n + "_columns_combine", M::Forward, mm(x, C(ky, d, y)), C(last_of(x), d, mm(R(d, x), y)),
          is_dim(ky, y, last_of(y)));
    c.add(n + "_columns_combine_back", M::Forward, C(k, d, mm(R(d, x), y)),
          mm(x, C(last_of(y), d, y)), is_dim(k, x, last_of(x)));
    const E reduction = is_dim(kx, x, last_of(x)) && is_dim(ky, y, rank(y) - 2);
    c.add(n + "_reduction_partition", M::Forward, Red(d, mm(P(kx, d, x), P(ky, d, y))), mm(x, y),
          reduction);
    c.add(n + "_reduction_combine", M::Forward, mm(C(kx, d, x), C(ky, d, y)), Red(d, mm(x, y)),
          reduction);
    c.add(n + "_reduction_combine_back", M::Forward, Red(d, mm(x, y)),
          mm(C(last_of(x), d, x), C(rank(y) - 2, d, y)));
  }
}

void conv_axioms(Ctx& c) {
  const E kw = ivar("kw"), kb = ivar("kb");
  for (int arity : {2, 3}) {
    const std::string n = arity == 2 ? "conv2d" : "conv2d_bias";
    std::map<std::string, E> attrs;
    auto conv = [&](const E& xx, const E& ww, const E& bb) {
      return app_attrs(O::Conv2D, arity == 2 ? std::vector<E>{xx, ww} : std::vector<E>{xx, ww, bb},
                       attrs);
    };
    conv(x, w, b);
    const E bias_dim = arity == 3 ? is_dim(kb, b, 0) : blit(true);
    auto bias = [&](const E& e) { return arity == 3 ? e : b; };
    const E dense = attrs.at("groups") == 1;
    const E sample = is_dim(k, x, 0);
    c.add(n + "_sample_partition", M::Both, conv(P(k, d, x), R(d, w), R(d, b)),
          P(k, d, conv(x, w, b)), sample);
    c.add(n + "_sample_combine", M::Both, conv(C(k, d, x), w, b),
          C(k, d, conv(x, R(d, w), R(d, b))), sample);
    // A spatial split exchanges halos: the output is the same, but an output split need not come
    // from an input split of the same degree, so one direction only.
    c.add(n + "_spatial_partition", M::Forward, conv(P(k, d, x), R(d, w), R(d, b)),
          P(k, d, conv(x, w, b)), is_dim(k, x, 2) || is_dim(k, x, 3));
    c.add(n + "_output_partition", M::Forward, conv(R(d, x), P(kw, d, w), bias(P(kb, d, b))),
          P(1, d, conv(x, w, b)), dense && is_dim(kw, w, 0) && bias_dim);
    c.add(n + "_output_partition_back", M::Forward, P(k, d, conv(x, w, b)),
          conv(R(d, x), P(0, d, w), bias(P(0, d, b))), dense && is_dim(k, x, 1));
    c.add(n + "_output_combine", M::Forward, conv(x, C(kw, d, w), bias(C(kb, d, b))),
          C(1, d, conv(R(d, x), w, b)), dense && is_dim(kw, w, 0) && bias_dim);
    c.add(n + "_output_combine_back", M::Forward, C(k, d, conv(R(d, x), w, b)),
          conv(x, C(0, d, w), bias(C(0, d, b))), dense && is_dim(k, x, 1));
    c.add(n + "_channel_reduction", M::Forward, Red(d, conv(P(k, d, x), P(kw, d, w), R(d, b))),
          conv(x, w, b),
          dense && attrs.at("activation") == 0 && is_dim(k, x, 1) && is_dim(kw, w, 1));
    c.add(n + "_channel_combine", M::Forward, conv(C(k, d, x), C(kw, d, w), b),
          Red(d, conv(x, w, R(d, b))),
          dense && attrs.at("activation") == 0 && is_dim(k, x, 1) && is_dim(kw, w, 1));
    c.add(n + "_group_partition", M::Forward, conv(P(k, d, x), P(kw, d, w), bias(P(kb, d, b))),
          P(1, d, conv(x, w, b)),
          attrs.at("groups") != 1 && is_dim(k, x, 1) && is_dim(kw, w, 0) && bias_dim);
  }
}

void normalization_axioms(Ctx& c) {
  std::map<std::string, E> attrs;
  auto bn = [&](const E& xx, const E& s, const E& bb) {
    return app_attrs(O::BatchNorm, {xx, s, bb}, attrs);
  };
  const E ks = ivar("ks"), kb = ivar("kb");
  const E channels = is_dim(k, x, 1) && is_dim(ks, w, 0) && is_dim(kb, b, 0);
  // Channels split freely; a sample split changes the statistics (no SyncBN), so there is no such
  // axiom.
  c.add("batchnorm_channel_partition", M::Forward, bn(P(k, d, x), P(ks, d, w), P(kb, d, b)),
        P(1, d, bn(x, w, b)), channels);
  c.add("batchnorm_channel_partition_back", M::Forward, P(k, d, bn(x, w, b)),
        bn(P(1, d, x), P(0, d, w), P(0, d, b)), is_dim(k, x, 1));
  c.add("batchnorm_channel_combine", M::Forward, bn(C(k, d, x), C(ks, d, w), C(kb, d, b)),
        C(1, d, bn(x, w, b)), channels);
  c.add("batchnorm_channel_combine_back", M::Forward, C(k, d, bn(x, w, b)),
        bn(C(1, d, x), C(0, d, w), C(0, d, b)), is_dim(k, x, 1));
  c.add("batchnorm_replicate", M::Both, bn(R(d, x), R(d, w), R(d, b)), R(d, bn(x, w, b)));
  for (int arity : {1, 3}) {
    const std::string n = arity == 1 ? "layernorm" : "layernorm_affine";
    std::map<std::string, E> la;
    auto ln = [&](const E& xx, const E& g, const E& bb) {
      return app_attrs(O::LayerNorm, arity == 1 ? std::vector<E>{xx} : std::vector<E>{xx, g, bb},
                       la);
    };
    ln(x, w, b);
    const E leading =
        ilit(0) <= norm(k, rank(x)) && norm(k, rank(x)) < rank(x) - la.at("normalized_dims");
    for (const auto& [fn, f] : dim_ops()) {
      if (fn == "combine")
        c.add(n + "_combine", M::Both, ln(C(k, d, x), w, b), C(k, d, ln(x, R(d, w), R(d, b))),
              leading);
      else if (fn == "partition")
        c.add(n + "_partition", M::Both, ln(P(k, d, x), R(d, w), R(d, b)), P(k, d, ln(x, w, b)),
              leading);
      else
        c.add(n + "_" + fn, M::Both, ln(f(k, d, x), w, b), f(k, d, ln(x, w, b)), leading);
    }
    c.add(n + "_replicate", M::Both, ln(R(d, x), R(d, w), R(d, b)), R(d, ln(x, w, b)));
  }
}

void embedding_axioms(Ctx& c) {
  const E kw = ivar("kw");
  for (O op : {O::Embedding, O::EmbeddingBag}) {
    const std::string n(to_string(op));
    std::map<std::string, E> attrs;
    auto emb = [&](const E& i, const E& t) { return app_attrs(op, {i, t}, attrs); };
    // Output dims follow the indices' dims, then the embedding dim: only non-negative k name the
    // same dim in both.
    const E sample = op == O::Embedding ? ilit(0) <= k && k < rank(x) : is_dim(k, x, 0) && k >= 0;
    const E out_last = op == O::Embedding ? rank(x) : ilit(1);
    c.add(n + "_sample_partition", M::Both, emb(P(k, d, x), R(d, w)), P(k, d, emb(x, w)), sample);
    c.add(n + "_sample_combine", M::Both, emb(C(k, d, x), w), C(k, d, emb(x, R(d, w))), sample);
    c.add(n + "_column_partition", M::Forward, emb(R(d, x), P(kw, d, w)), P(out_last, d, emb(x, w)),
          is_dim(kw, w, 1));
    c.add(n + "_column_partition_back", M::Forward, P(k, d, emb(x, w)), emb(R(d, x), P(1, d, w)),
          norm(k, out_last + 1) == out_last);
    c.add(n + "_column_combine", M::Forward, emb(x, C(kw, d, w)), C(out_last, d, emb(R(d, x), w)),
          is_dim(kw, w, 1));
    c.add(n + "_row_reduction", M::Forward, Red(d, emb(R(d, x), P(kw, d, w))), emb(x, w),
          is_dim(kw, w, 0));
    c.add(n + "_row_combine", M::Forward, emb(x, C(kw, d, w)), Red(d, emb(R(d, x), w)),
          is_dim(kw, w, 0));
    c.add(n + "_row_combine_back", M::Forward, Red(d, emb(R(d, x), w)), emb(x, C(0, d, w)));
  }
  // A bag is an embedding of each index followed by a sum (or mean) over the bag dim.
  for (int agg : {0, 1}) {
    std::map<std::string, E> attrs = {{"num_entries", ivar("n")}, {"embedding_dim", ivar("e")}};
    const E emb = app(O::Embedding, attrs, {x, w});
    attrs["aggregate"] = ilit(agg);
    const E bag = app(O::EmbeddingBag, attrs, {x, w});
    const E reduced = app(agg == 0 ? O::ReduceSum : O::ReduceMean,
                          {{"axes", llit({1})}, {"keepdims", ilit(0)}}, {emb});
    c.add(agg == 0 ? "embedding_bag_sum" : "embedding_bag_mean", M::Forward, bag, reduced);
  }
}

void attention_axioms(Ctx& c) {
  std::vector<E> in;
  for (const char* n : {"q", "k", "v", "wq", "wk", "wv", "wo"}) in.push_back(tvar(n));
  std::map<std::string, E> attrs;
  auto mha = [&](std::vector<E> args) { return app_attrs(O::MultiHeadAttention, args, attrs); };
  // One dim variable per split tensor, each guarded to the dim it must name.
  std::vector<E> dims;
  for (int i = 0; i < 7; ++i) dims.push_back(ivar(fmt::format("k{}", i)));
  std::vector<E> sample, heads;
  E sample_guard = blit(true), heads_guard = blit(true);
  for (int i = 0; i < 3; ++i) {
    sample.push_back(P(dims[i], d, in[i]));
    sample_guard = sample_guard && is_dim(dims[i], in[i], 0);
  }
  for (int i = 3; i < 7; ++i) sample.push_back(R(d, in[i]));
  for (int i = 0; i < 3; ++i) heads.push_back(R(d, in[i]));
  for (int i = 3; i < 7; ++i) {
    heads.push_back(P(dims[i], d, in[i]));
    heads_guard = heads_guard && is_dim(dims[i], in[i], i == 6 ? 0 : 1);
  }
  c.add("attention_sample_partition", M::Forward, mha(sample), P(0, d, mha(in)), sample_guard);
  c.add("attention_head_reduction", M::Forward, Red(d, mha(heads)), mha(in), heads_guard);
  // A fused kernel (the scores never leave the chip) computes the same function as the unfused
  // one: only where the scores live differs.
  auto with_kernel = [&](int fused) {
    auto a = attrs;
    a["fused"] = ilit(fused);
    return app(O::MultiHeadAttention, a, in);
  };
  c.add("attention_fused_kernel", M::Forward, with_kernel(1), with_kernel(0));
}

// Concat, Split, Transpose, Reshape, Flatten, ReduceSum/Mean and the losses.
void layout_axioms(Ctx& c) {
  c.add("concat_single", M::Forward, app(O::Concat, {{"axis", ivar("a")}}, {x}), x);
  for (int arity : {2, 3}) {
    const std::string n = "concat" + std::to_string(arity);
    std::map<std::string, E> attrs;
    auto cat = [&](const std::vector<E>& a) { return app_attrs(O::Concat, a, attrs); };
    auto args = [&](const std::function<E(const E&)>& f) {
      std::vector<E> a = {f(x), f(y)};
      if (arity == 3) a.push_back(f(z));
      return a;
    };
    cat(args([](const E& t) { return t; }));
    const E other = norm(k, rank(x)) != norm(attrs.at("axis"), rank(x)) || d == 1;
    for (const auto& [fn, f] : dim_ops())
      c.add(n + "_" + fn, M::Both, cat(args([&, f = f](const E& t) { return f(k, d, t); })),
            f(k, d, cat(args([](const E& t) { return t; }))), other);
    for (const auto& [rn, r] :
         std::vector<std::pair<std::string, std::function<E(const E&, const E&)>>>{
             {"replicate", R}, {"reduce", Red}, {"allreduce", AR}})
      c.add(n + "_" + rn, M::Both, cat(args([&, r = r](const E& t) { return r(d, t); })),
            r(d, cat(args([](const E& t) { return t; }))));
  }
  for (int out = 0; out < 3; ++out) {
    const std::string n = "split" + std::to_string(out);
    std::map<std::string, E> attrs;
    auto sp = [&](const E& t) { return app_attrs(O::Split, {t}, attrs, out); };
    sp(x);
    const E other = norm(k, rank(x)) != norm(attrs.at("axis"), rank(x)) || d == 1;
    for (const auto& [fn, f] : dim_ops())
      c.add(n + "_" + fn, M::Both, sp(f(k, d, x)), f(k, d, sp(x)), other);
    c.add(n + "_replicate", M::Both, sp(R(d, x)), R(d, sp(x)));
    c.add(n + "_reduce", M::Both, sp(Red(d, x)), Red(d, sp(x)));
  }
  {
    std::map<std::string, E> attrs;
    auto tr = [&](const E& t) { return app_attrs(O::Transpose, {t}, attrs); };
    tr(x);
    const E perm = attrs.at("perm");
    for (const auto& [fn, f] : dim_ops())
      c.add("transpose_" + fn, M::Forward, tr(f(k, d, x)),
            f(perm_pos(perm, norm(k, rank(x))), d, tr(x)));
    c.add("transpose_replicate", M::Both, tr(R(d, x)), R(d, tr(x)));
    c.add("transpose_reduce", M::Both, tr(Red(d, x)), Red(d, tr(x)));
  }
  for (O op : {O::Reshape, O::Flatten}) {
    const std::string n(to_string(op));
    std::map<std::string, E> attrs;
    auto rs = [&](const E& t) { return app_attrs(op, {t}, attrs); };
    rs(x);
    const E lead = op == O::Flatten ? attrs.at("axis") >= 1 : blit(true);
    for (const auto& [fn, f] : dim_ops()) {
      if (fn == "pipeline" || fn == "batch") continue;
      c.add(n + "_leading_" + fn, M::Forward, rs(f(k, d, x)), f(0, d, rs(x)),
            lead && is_dim(k, x, 0));
    }
    if (op == O::Flatten)
      c.add("flatten_inner_partition", M::Forward, rs(P(attrs.at("axis"), d, x)), P(1, d, rs(x)),
            attrs.at("axis") >= 1 && attrs.at("axis") < rank(x));
    c.add(n + "_replicate", M::Both, rs(R(d, x)), R(d, rs(x)));
    c.add(n + "_reduce", M::Both, rs(Red(d, x)), Red(d, rs(x)));
  }
  for (O op : {O::ReduceSum, O::ReduceMean}) {
    const std::string n(to_string(op));
    std::map<std::string, E> attrs;
    auto red = [&](const E& t) { return app_attrs(op, {t}, attrs); };
    red(x);
    const E axes = attrs.at("axes"), keep = attrs.at("keepdims");
    const E nk = norm(k, rank(x));
    // Axes lists are read literally: guards require them non-negative.
    const E literal = count_below(axes, 0) == 0;
    const E kept = literal && ilit(0) <= nk && !contains(axes, nk);
    const E out_dim = ite(keep != 0, nk, nk - count_below(axes, nk));
    for (const auto& [fn, f] : dim_ops())
      c.add(n + "_kept_" + fn, M::Forward, red(f(k, d, x)), f(out_dim, d, red(x)), kept);
    // The new blocks are the innermost partial sums only when k is the last reduced axis.
    c.add(n + "_reduced_partition", M::Forward, Red(d, red(P(k, d, x))), red(x),
          literal && ilit(0) <= nk && contains(axes, nk) &&
              count_below(axes, nk) == list_len(axes) - 1);
    // Replicas of the input stay outer to the new partial sums: equal only without new ones.
    c.add(n + "_replicate", M::Both, red(R(d, x)), R(d, red(x)), replica(red(x)) == replica(x));
    c.add(n + "_reduce", M::Joint, red(Red(d, x)), Red(d, red(x)), replica(red(x)) == replica(x));
    c.add(n + "_allreduce", M::Joint, red(AR(d, x)), AR(d, red(x)), replica(red(x)) == replica(x));
  }
  {
    auto sce = [&](const E& l, const E& t) { return app(O::SoftmaxCrossEntropy, {}, {l, t}); };
    const E sample = ilit(0) <= norm(k, rank(x)) && norm(k, rank(x)) < rank(x) - 1 && k >= 0;
    for (const auto& [fn, f] : dim_ops())
      c.add("cross_entropy_" + fn, M::Both, sce(f(k, d, x), f(k, d, y)), f(k, d, sce(x, y)),
            sample);
    c.add("cross_entropy_replicate", M::Both, sce(R(d, x), R(d, y)), R(d, sce(x, y)));
    // Megatron-LM's vocabulary-parallel loss: each block of classes gives a partial loss whose
    // sum over the blocks is the whole-vocabulary loss (its max and sum are all-reduced inside).
    // Instantiated on the split form only (both ways, every whole-vocabulary loss spawned split
    // ones). The split dim is a variable bound by the guard: a pattern holds no arithmetic.
    c.add("cross_entropy_vocab_parallel", M::Forward,
          Red(d, app(O::SoftmaxCrossEntropy, {{"vocab_parallel", ilit(1)}}, {P(k, d, x), R(d, y)})),
          sce(x, y), is_dim(k, x, last_of(x)));
    auto mse = [&](const E& p, const E& t) { return app(O::MSELoss, {}, {p, t}); };
    for (const auto& [fn, f] : dim_ops())
      c.add("mse_" + fn, M::Forward, mse(f(k, d, x), f(k, d, y)), f(0, d, mse(x, y)),
            is_dim(k, x, 0));
    c.add("mse_replicate", M::Both, mse(R(d, x), R(d, y)), R(d, mse(x, y)));
  }
}

}  // namespace

void add_unary_compute_axioms(Theory& th, OpType op) {
  Ctx c{th};
  unary_axioms(c, op);
}

void add_compute_axioms(Theory& th) {
  Ctx c{th};
  unary_axioms(c);
  binary_axioms(c);
  dense_axioms(c);
  conv_axioms(c);
  normalization_axioms(c);
  embedding_axioms(c);
  attention_axioms(c);
  layout_axioms(c);
}

}  // namespace unity::rules::spec
