// What every defined application of an operator satisfies: ranks, and the degree and replica
// relations of the core's shape inference that proofs need (chiefly to see that a rule's target
// cannot be defined where its reading of an axis would differ from the source's).
#include <string>

#include "theory.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/op_type.h"

namespace unity::rules::spec {
namespace {

using O = OpType;

struct Facts {
  Theory& t;
  void add(const std::string& name, const E& trigger, const E& holds) {
    t.facts.push_back({name, trigger, holds, E()});
  }
  // degree(y, i) = degree(x, i) wherever `where` holds, and size(y, i) = size(x, i) wherever
  // `sizes` does.
  void same_degrees(const std::string& name, const E& y, const E& x, const E& where = blit(true),
                    E sizes = E()) {
    const E i = ivar("i");
    if (sizes.empty()) sizes = where;
    add(name + "_degrees", degree(y, i), !(ok(y) && where) || degree(y, i) == degree(x, i));
    add(name + "_sizes", size(y, i), !(ok(y) && sizes) || size(y, i) == size(x, i));
  }
};

E last(const E& x) { return rank(x) - 1; }

}  // namespace

void add_shape_keeping_facts(Theory& th, OpType op) {
  Facts f{th};
  const E x = tvar("x");
  std::map<std::string, E> attrs;
  const E a = with_attr_vars(op, {x}, "a_", attrs);
  E holds = rank(a) == rank(x) && replica(a) == replica(x);
  if (op == O::Softmax || axis_function(op))
    holds = holds && -rank(x) <= attrs.at("axis") && attrs.at("axis") < rank(x) &&
            degree(x, norm(attrs.at("axis"), rank(x))) == 1;
  f.add(std::string(to_string(op)) + "_shape", a, !ok(a) || holds);
  f.same_degrees(std::string(to_string(op)), a, x);
}

void add_typing_facts(Theory& th) {
  Facts f{th};
  const E t = tvar("t"), x = tvar("x"), y = tvar("y"), w = tvar("w"), b = tvar("b");
  const E i = ivar("i"), k = ivar("k"), d = ivar("d");

  f.add("degree_positive", degree(t, i),
        !(ok(t) && ilit(0) <= i && i < rank(t)) || degree(t, i) >= 1);
  f.add("replica_positive", replica(t), !ok(t) || replica(t) >= 1);
  f.add("rank_nonnegative", rank(t), rank(t) >= 0);

  // Parallel operators.
  for (O op : {O::Partition, O::Combine, O::Pipeline, O::Batch}) {
    const std::string n(to_string(op));
    const E a = app(op, {{"dim", k}, {"degree", d}}, {x});
    const E nk = norm(k, rank(x));
    E holds =
        rank(a) == rank(x) && -rank(x) <= k && k < rank(x) && d >= 1 && replica(a) == replica(x);
    if (op == O::Partition) holds = holds && degree(a, nk) == degree(x, nk) * d;
    if (op == O::Combine) holds = holds && degree(a, nk) * d == degree(x, nk);
    f.add(n + "_shape", a, !ok(a) || holds);
    const bool splits = op == O::Partition || op == O::Combine;
    f.same_degrees(n, a, x, splits ? i != nk : blit(true), splits ? blit(true) : i != nk);
    if (!splits)
      f.add(n + "_size", a,
            !ok(a) || (op == O::Pipeline ? size(a, nk) * d == size(x, nk)
                                         : size(a, nk) == size(x, nk) * d));
  }
  for (O op : {O::Replicate, O::Reduce, O::AllReduce}) {
    const std::string n(to_string(op));
    const E a = app(op, {{"degree", d}}, {x});
    E rep = op == O::Replicate ? replica(a) == replica(x) * d
            : op == O::Reduce  ? replica(a) * d == replica(x)
                               : replica(a) == replica(x);
    f.add(n + "_shape", a, !ok(a) || (rank(a) == rank(x) && d >= 1 && rep));
    f.same_degrees(n, a, x);
  }

  // Operators that keep their first input's shape.
  for (O op : first_theory_unary_ops()) add_shape_keeping_facts(th, op);
  add_shape_keeping_facts(th, O::Softmax);
  for (O op : {O::Add, O::Sub, O::Mul, O::Div}) {
    const std::string n(to_string(op));
    const E a = app(op, {}, {x, y});
    f.add(n + "_shape", a, !ok(a) || rank(a) == ite(rank(x) < rank(y), rank(y), rank(x)));
    // Broadcasting, seen from dim j of either operand: the aligned dim of the other (counted from
    // the end) has the same size and degree, or one of them has size 1 and that one degree 1.
    const E j = ivar("j");
    for (int side = 0; side < 2; ++side) {
      const E& me = side == 0 ? x : y;
      const E& other = side == 0 ? y : x;
      const E jo = j - rank(me) + rank(other);
      const E in_me = ilit(0) <= j && j < rank(me);
      const E in_other = ilit(0) <= jo && jo < rank(other);
      const E sizes_agree = size(me, j) == size(other, jo);
      E holds = !ok(a) || !in_me ||
                ((!in_other || sizes_agree || size(me, j) == 1 || size(other, jo) == 1) &&
                 (!in_other || !sizes_agree || degree(me, j) == degree(other, jo)) &&
                 (!(size(me, j) == 1) || (in_other && size(other, jo) == 1) || degree(me, j) == 1));
      f.t.facts.push_back(
          {n + (side == 0 ? "_broadcast_left" : "_broadcast_right"), a, holds, degree(me, j)});
    }
  }

  // Linear: x [b..., in], w [in, out], b [out].
  for (int arity : {2, 3}) {
    std::map<std::string, E> attrs;
    const std::vector<E> args = arity == 2 ? std::vector<E>{x, w} : std::vector<E>{x, w, b};
    const E a = with_attr_vars(O::Linear, args, "a_", attrs);
    E holds = rank(w) == 2 && rank(x) >= 1 && rank(a) == rank(x) &&
              degree(w, 0) == degree(x, last(x)) && replica(x) == degree(w, 1) &&
              replica(a) == degree(x, last(x)) && degree(a, last(x)) == degree(w, 1);
    if (arity == 3) holds = holds && rank(b) == 1 && degree(b, 0) == degree(w, 1);
    const std::string n = "Linear" + std::to_string(arity);
    f.add(n + "_shape", a, !ok(a) || holds);
    f.same_degrees(n, a, x, i < last(x));
  }
  // MatMul and BatchMatMul: a [.., m, k], b [k, n] or [.., k, n].
  for (O op : {O::MatMul, O::BatchMatMul}) {
    const E a = app(op, {}, {x, y});
    E holds = rank(x) >= 2 && rank(y) >= 2 && rank(a) == rank(x) &&
              degree(x, last(x)) == degree(y, rank(y) - 2) && replica(a) == degree(x, last(x)) &&
              replica(x) == degree(y, last(y)) && degree(a, last(x)) == degree(y, last(y));
    holds = holds && (op == O::MatMul ? (rank(y) == 2 || rank(y) == rank(x))
                                      : (rank(y) == rank(x) && rank(x) >= 3));
    const std::string n(to_string(op));
    f.add(n + "_shape", a, !ok(a) || holds);
    f.same_degrees(n, a, x, i < last(x));
  }
  for (int arity : {2, 3}) {
    std::map<std::string, E> attrs;
    const std::vector<E> args = arity == 2 ? std::vector<E>{x, w} : std::vector<E>{x, w, b};
    const E a = with_attr_vars(O::Conv2D, args, "a_", attrs);
    E holds =
        rank(x) == 4 && rank(w) == 4 && rank(a) == 4 && degree(a, 0) == degree(x, 0) &&
        degree(a, 1) == degree(w, 0) && degree(a, 2) == degree(x, 2) &&
        degree(a, 3) == degree(x, 3) &&
        (attrs.at("groups") != 1 || (degree(w, 1) == degree(x, 1) && replica(a) == degree(x, 1) &&
                                     replica(x) == degree(w, 0)));
    if (arity == 3) holds = holds && rank(b) == 1 && degree(b, 0) == degree(w, 0);
    f.add("Conv2D" + std::to_string(arity) + "_shape", a, !ok(a) || holds);
  }
  {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::Pool2D, {x}, "a_", attrs);
    f.add("Pool2D_shape", a, !ok(a) || (rank(x) == 4 && rank(a) == 4 && replica(a) == replica(x)));
    f.same_degrees("Pool2D", a, x, blit(true), i < 2);
  }
  {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::BatchNorm, {x, w, b}, "a_", attrs);
    f.add("BatchNorm_shape", a,
          !ok(a) || (rank(x) >= 2 && rank(a) == rank(x) && replica(a) == replica(x)));
    f.same_degrees("BatchNorm", a, x);
  }
  for (int arity : {1, 3}) {
    std::map<std::string, E> attrs;
    const std::vector<E> args = arity == 1 ? std::vector<E>{x} : std::vector<E>{x, w, b};
    const E a = with_attr_vars(O::LayerNorm, args, "a_", attrs);
    f.add("LayerNorm" + std::to_string(arity) + "_shape", a,
          !ok(a) || (rank(a) == rank(x) && replica(a) == replica(x) &&
                     attrs.at("normalized_dims") >= 1 && attrs.at("normalized_dims") <= rank(x)));
    f.same_degrees("LayerNorm" + std::to_string(arity), a, x);
    const E nd = attrs.at("normalized_dims");
    f.add("LayerNorm" + std::to_string(arity) + "_whole", degree(a, i),
          !ok(a) || i < rank(x) - nd || i >= rank(x) || degree(x, i) == 1);
  }
  for (O op : {O::Embedding, O::EmbeddingBag}) {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(op, {x, w}, "a_", attrs);
    E holds = rank(w) == 2 && replica(a) == degree(w, 0);
    if (op == O::Embedding)
      holds = holds && rank(a) == rank(x) + 1 && degree(a, rank(x)) == degree(w, 1);
    else
      holds = holds && rank(x) == 2 && rank(a) == 2 && degree(a, 1) == degree(w, 1) &&
              degree(a, 0) == degree(x, 0);
    f.add(std::string(to_string(op)) + "_shape", a, !ok(a) || holds);
    if (op == O::Embedding) f.same_degrees("Embedding", a, x, i < rank(x));
  }
  {
    std::map<std::string, E> attrs;
    std::vector<E> args;
    for (const char* n : {"q", "k", "v", "wq", "wk", "wv", "wo"}) args.push_back(tvar(n));
    const E a = with_attr_vars(O::MultiHeadAttention, args, "a_", attrs);
    f.add("MultiHeadAttention_shape", a,
          !ok(a) || (rank(args[0]) == 3 && rank(a) == 3 && replica(a) == degree(args[3], 1)));
    f.same_degrees("MultiHeadAttention", a, args[0]);
  }
  for (int arity : {2, 3}) {
    std::vector<E> args = {x, y};
    if (arity == 3) args.push_back(tvar("z"));
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::Concat, args, "a_", attrs);
    const E ax = attrs.at("axis");
    E holds = rank(a) == rank(x) && rank(y) == rank(x) && replica(a) == replica(x) &&
              -rank(x) <= ax && ax < rank(x) && degree(x, norm(ax, rank(x))) == 1 &&
              degree(y, norm(ax, rank(x))) == 1;
    f.add("Concat" + std::to_string(arity) + "_shape", a, !ok(a) || holds);
    f.same_degrees("Concat" + std::to_string(arity), a, x, blit(true), i != norm(ax, rank(x)));
    E total = size(x, norm(ax, rank(x))) + size(y, norm(ax, rank(x)));
    if (arity == 3) total = total + size(tvar("z"), norm(ax, rank(x)));
    f.add("Concat" + std::to_string(arity) + "_axis_size", a,
          !ok(a) || size(a, norm(ax, rank(x))) == total);
  }
  for (int out = 0; out < 3; ++out) {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::Split, {x}, "a_", attrs, out);
    const E ax = attrs.at("axis");
    f.add("Split" + std::to_string(out) + "_shape", a,
          !ok(a) ||
              (rank(a) == rank(x) && replica(a) == replica(x) && -rank(x) <= ax && ax < rank(x) &&
               degree(x, norm(ax, rank(x))) == 1 && out < list_len(attrs.at("sizes"))));
    f.same_degrees("Split" + std::to_string(out), a, x, blit(true), i != norm(ax, rank(x)));
    f.add("Split" + std::to_string(out) + "_axis_size", a,
          !ok(a) || size(a, norm(ax, rank(x))) == list_at(attrs.at("sizes"), out));
  }
  {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::Transpose, {x}, "a_", attrs);
    f.add("Transpose_shape", a,
          !ok(a) || (rank(a) == rank(x) && list_len(attrs.at("perm")) == rank(x) &&
                     replica(a) == replica(x)));
    const E in_range = ok(a) && ilit(0) <= i && i < rank(x);
    f.add("Transpose_degrees", degree(a, i),
          !in_range || degree(a, i) == degree(x, list_at(attrs.at("perm"), i)));
    f.add("Transpose_sizes", size(a, i),
          !in_range || size(a, i) == size(x, list_at(attrs.at("perm"), i)));
  }
  {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(O::Reshape, {x}, "a_", attrs);
    f.add("Reshape_shape", a,
          !ok(a) || (rank(a) == list_len(attrs.at("shape")) && replica(a) == replica(x)));
    std::map<std::string, E> fattrs;
    const E fl = with_attr_vars(O::Flatten, {x}, "a_", fattrs);
    const E ax = fattrs.at("axis");
    f.add("Flatten_shape", fl,
          !ok(fl) || (rank(fl) == 2 && replica(fl) == replica(x) && ilit(0) <= ax &&
                      ax <= rank(x) && (ax != 0 || (degree(fl, 0) == 1 && size(fl, 0) == 1)) &&
                      (ax == 0 || degree(fl, 0) == degree(x, 0)) &&
                      (ax == rank(x) || degree(fl, 1) == degree(x, ax))));
  }
  for (O op : {O::ReduceSum, O::ReduceMean}) {
    std::map<std::string, E> attrs;
    const E a = with_attr_vars(op, {x}, "a_", attrs);
    f.add(std::string(to_string(op)) + "_shape", a,
          !ok(a) || rank(a) == ite(attrs.at("keepdims") != 0, rank(x),
                                   rank(x) - list_len(attrs.at("axes"))));
  }
  {
    const E a = app(O::SoftmaxCrossEntropy, {}, {x, y});
    f.add("SoftmaxCrossEntropy_shape", a,
          !ok(a) || (rank(x) >= 2 && rank(a) == rank(x) - 1 && rank(y) == rank(a) &&
                     replica(a) == replica(x) && degree(x, last(x)) == 1));
    f.same_degrees("SoftmaxCrossEntropy", a, x, i < last(x));
    const E m = app(O::MSELoss, {}, {x, y});
    f.add("MSELoss_shape", m,
          !ok(m) || (rank(m) == 1 && rank(x) >= 1 && degree(m, 0) == degree(x, 0)));
  }
}

}  // namespace unity::rules::spec
