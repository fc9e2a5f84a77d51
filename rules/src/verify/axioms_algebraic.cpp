// Algebraic properties of the compute operators (TASO's axioms, for our operator set):
// commutativity, associativity and distributivity of the element-wise operators, matrix products,
// fused activations and biases, transposes, and element-wise operators commuting with data
// movement. Properties whose two sides need different degrees to be defined hold where both are
// (Joint).
#include <functional>

#include "theory.h"

namespace unity::rules::spec {
namespace {

using M = Axiom::Mode;
using O = OpType;

struct Ctx {
  Theory& th;
  void add(std::string name, M mode, E lhs, E rhs, E guard = E()) {
    th.axioms.push_back(
        {std::move(name), mode, std::move(lhs), std::move(rhs), std::move(guard), E()});
  }
};

const E x = tvar("x"), y = tvar("y"), z = tvar("z"), w = tvar("w"), b = tvar("b");

E bin(O op, const E& l, const E& r) { return app(op, {}, {l, r}); }
E smul(const E& s, const E& t) { return app(O::ScalarMul, {{"scalar", s}}, {t}); }
E sadd(const E& s, const E& t) { return app(O::ScalarAdd, {{"scalar", s}}, {t}); }
E mm(const E& l, const E& r) { return app(O::MatMul, {}, {l, r}); }

// Activation codes of the "activation" attribute and the operator each one is.
const std::vector<std::pair<int, O>> kActivations = {
    {1, O::Relu}, {2, O::Gelu}, {3, O::Sigmoid}, {4, O::Tanh}};

void elementwise(Ctx& c) {
  c.add("add_commutative", M::Both, bin(O::Add, x, y), bin(O::Add, y, x));
  c.add("mul_commutative", M::Both, bin(O::Mul, x, y), bin(O::Mul, y, x));
  c.add("add_associative", M::Joint, bin(O::Add, bin(O::Add, x, y), z),
        bin(O::Add, x, bin(O::Add, y, z)));
  c.add("mul_associative", M::Joint, bin(O::Mul, bin(O::Mul, x, y), z),
        bin(O::Mul, x, bin(O::Mul, y, z)));
  c.add("mul_add_distributive", M::Joint, bin(O::Mul, bin(O::Add, x, y), z),
        bin(O::Add, bin(O::Mul, x, z), bin(O::Mul, y, z)));
  c.add("mul_sub_distributive", M::Joint, bin(O::Mul, bin(O::Sub, x, y), z),
        bin(O::Sub, bin(O::Mul, x, z), bin(O::Mul, y, z)));
  const E s = rvar("s"), t = rvar("t");
  c.add("sub_is_add_negated", M::Joint, bin(O::Sub, x, y), bin(O::Add, x, smul(rlit(-1.0), y)));
  c.add("div_is_mul_reciprocal", M::Joint, bin(O::Div, x, y),
        bin(O::Mul, x, app(O::Pow, {{"scalar", rlit(-1.0)}}, {y})));
  c.add("scalar_mul_compose", M::Forward, smul(s, smul(t, x)), smul(s * t, x));
  c.add("scalar_add_compose", M::Forward, sadd(s, sadd(t, x)), sadd(s + t, x));
  c.add("scalar_mul_one", M::Forward, smul(s, x), x, s == rlit(1.0));
  c.add("scalar_add_zero", M::Forward, sadd(s, x), x, s == rlit(0.0));
  c.add("scalar_mul_add", M::Joint, smul(s, bin(O::Add, x, y)),
        bin(O::Add, smul(s, x), smul(s, y)));
  c.add("scalar_mul_sub", M::Joint, smul(s, bin(O::Sub, x, y)),
        bin(O::Sub, smul(s, x), smul(s, y)));
  c.add("scalar_mul_left", M::Joint, bin(O::Mul, smul(s, x), y), smul(s, bin(O::Mul, x, y)));
  c.add("scalar_mul_div", M::Joint, bin(O::Div, smul(s, x), y), smul(s, bin(O::Div, x, y)));
  c.add("identity", M::Forward, app(O::Identity, {}, {x}), x);
  c.add("dropout_rate_zero", M::Forward, app(O::Dropout, {{"rate", s}}, {x}), x, s == rlit(0.0));
  c.add("relu_idempotent", M::Forward, app(O::Relu, {}, {app(O::Relu, {}, {x})}),
        app(O::Relu, {}, {x}));
  c.add("exp_of_sum", M::Joint, app(O::Exp, {}, {bin(O::Add, x, y)}),
        bin(O::Mul, app(O::Exp, {}, {x}), app(O::Exp, {}, {y})));
}

void dense(Ctx& c) {
  const E s = rvar("s");
  c.add("matmul_associative", M::Joint, mm(mm(x, y), z), mm(x, mm(y, z)),
        rank(y) == 2 && rank(z) == 2);
  c.add("matmul_add_right", M::Joint, mm(x, bin(O::Add, y, z)), bin(O::Add, mm(x, y), mm(x, z)));
  c.add("matmul_add_left", M::Joint, mm(bin(O::Add, x, y), z), bin(O::Add, mm(x, z), mm(y, z)));
  c.add("matmul_scalar_left", M::Joint, mm(smul(s, x), y), smul(s, mm(x, y)));
  c.add("matmul_scalar_right", M::Joint, mm(x, smul(s, y)), smul(s, mm(x, y)));
  const E t2 = llit({1, 0});
  auto tr = [](const E& p, const E& t) { return app(O::Transpose, {{"perm", p}}, {t}); };
  c.add("matmul_transpose", M::Joint, tr(t2, mm(x, y)), mm(tr(t2, y), tr(t2, x)),
        rank(x) == 2 && rank(y) == 2);

  const E o = ivar("o"), act = ivar("act");
  auto lin = [&](const E& a, const std::vector<E>& args) {
    return app(O::Linear, {{"out_features", o}, {"activation", a}}, args);
  };
  c.add("linear_is_matmul", M::Joint, lin(0, {x, w}), mm(x, w), rank(x) >= 2);
  c.add("linear_bias_is_add", M::Joint, lin(0, {x, w, b}), bin(O::Add, lin(0, {x, w}), b));
  c.add("linear_scalar_input", M::Joint, lin(0, {smul(s, x), w}), smul(s, lin(0, {x, w})));
  for (const auto& [code, op] : kActivations) {
    const std::string n(to_string(op));
    c.add("linear_fused_" + n, M::Both, lin(code, {x, w}), app(op, {}, {lin(0, {x, w})}));
    c.add("linear_bias_fused_" + n, M::Both, lin(code, {x, w, b}),
          app(op, {}, {lin(0, {x, w, b})}));
    std::map<std::string, E> ca;
    auto conv = [&](const E& a, const std::vector<E>& args) {
      std::map<std::string, E> attrs;
      for (const char* k : {"out_channels", "groups"}) attrs[k] = ivar(std::string("c_") + k);
      for (const char* k : {"kernel", "stride", "padding", "dilation"})
        attrs[k] = lvar(std::string("c_") + k);
      attrs["activation"] = a;
      return app(O::Conv2D, attrs, args);
    };
    c.add("conv2d_fused_" + n, M::Both, conv(code, {x, w}), app(op, {}, {conv(0, {x, w})}));
    c.add("conv2d_bias_fused_" + n, M::Both, conv(code, {x, w, b}),
          app(op, {}, {conv(0, {x, w, b})}));
    const E eps = rvar("eps");
    auto bn = [&](const E& a) {
      return app(O::BatchNorm, {{"epsilon", eps}, {"activation", a}}, {x, y, z});
    };
    c.add("batchnorm_fused_" + n, M::Both, bn(code), app(op, {}, {bn(0)}));
  }
}

// A unary element-wise operator commutes with data movement.
void unary_layout_axioms(Ctx& c, O op) {
  const E p = lvar("p"), a = ivar("a"), sz = lvar("sz");
  auto tr = [](const E& perm, const E& t) { return app(O::Transpose, {{"perm", perm}}, {t}); };
  auto cat = [&](const std::vector<E>& args) { return app(O::Concat, {{"axis", a}}, args); };
  auto sp = [&](const E& t, int out) {
    return app(O::Split, {{"axis", a}, {"sizes", sz}}, {t}, out);
  };
  const std::string n(to_string(op));
  std::map<std::string, E> attrs;
  auto u = [&](const E& t) { return with_attr_vars(op, {t}, "u_", attrs); };
  u(x);
  c.add(n + "_transpose", M::Both, u(tr(p, x)), tr(p, u(x)));
  c.add(n + "_reshape", M::Both, u(app(O::Reshape, {{"shape", sz}}, {x})),
        app(O::Reshape, {{"shape", sz}}, {u(x)}));
  c.add(n + "_flatten", M::Both, u(app(O::Flatten, {{"axis", a}}, {x})),
        app(O::Flatten, {{"axis", a}}, {u(x)}));
  c.add(n + "_concat", M::Both, u(cat({x, y})), cat({u(x), u(y)}));
  for (int out = 0; out < 2; ++out)
    c.add(n + "_split" + std::to_string(out), M::Both, u(sp(x, out)), sp(u(x), out));
}

void layout(Ctx& c) {
  const E p = lvar("p"), q = lvar("q"), a = ivar("a"), sz = lvar("sz");
  auto tr = [](const E& perm, const E& t) { return app(O::Transpose, {{"perm", perm}}, {t}); };
  c.add("transpose_compose", M::Forward, tr(p, tr(q, x)), tr(compose(q, p), x));
  c.add("transpose_identity", M::Forward, tr(p, x), x, compose(p, p) == p);
  auto cat = [&](const std::vector<E>& args) { return app(O::Concat, {{"axis", a}}, args); };
  auto sp = [&](const E& t, int out) {
    return app(O::Split, {{"axis", a}, {"sizes", sz}}, {t}, out);
  };
  c.add("concat_of_split2", M::Forward, cat({sp(x, 0), sp(x, 1)}), x, list_len(sz) == 2);
  c.add("concat_of_split3", M::Forward, cat({sp(x, 0), sp(x, 1), sp(x, 2)}), x, list_len(sz) == 3);
  const E na = norm(a, rank(x));
  c.add("split_of_concat0", M::Forward, sp(cat({x, y}), 0), x,
        list_len(sz) == 2 && list_at(sz, 0) == size(x, na));
  c.add("split_of_concat1", M::Forward, sp(cat({x, y}), 1), y,
        list_len(sz) == 2 && list_at(sz, 1) == size(y, na));
  c.add("concat_associative_left", M::Forward, cat({cat({x, y}), z}), cat({x, y, z}));
  c.add("concat_associative_right", M::Forward, cat({x, cat({y, z})}), cat({x, y, z}));

  // A transpose moves the concatenated axis.
  c.add("transpose_concat", M::Forward, tr(p, cat({x, y})),
        app(O::Concat, {{"axis", perm_pos(p, norm(a, rank(x)))}}, {tr(p, x), tr(p, y)}));
  const E a2 = ivar("a2");
  c.add("concat_transpose", M::Forward, app(O::Concat, {{"axis", a2}}, {tr(p, x), tr(p, y)}),
        tr(p, app(O::Concat, {{"axis", list_at(p, norm(a2, rank(x)))}}, {x, y})));

  // Element-wise operators commute with data movement.
  for (O op : first_theory_unary_ops()) unary_layout_axioms(c, op);
  for (O op : {O::Add, O::Sub, O::Mul, O::Div}) {
    const std::string n(to_string(op));
    c.add(n + "_transpose", M::Joint, bin(op, tr(p, x), tr(p, y)), tr(p, bin(op, x, y)),
          rank(x) == rank(y));
    c.add(n + "_concat", M::Joint, bin(op, cat({x, y}), cat({z, w})),
          cat({bin(op, x, z), bin(op, y, w)}));
  }
  for (O op : {O::ReduceSum, O::ReduceMean}) {
    std::map<std::string, E> attrs;
    auto r = [&](const E& t) { return with_attr_vars(op, {t}, "r_", attrs); };
    c.add(std::string(to_string(op)) + "_scalar", M::Joint, r(smul(rvar("s"), x)),
          smul(rvar("s"), r(x)));
  }
}

}  // namespace

const std::vector<Axiom>& concat_peel_axioms() {
  static const std::vector<Axiom> axioms = [] {
    Theory th;
    Ctx c{th};
    const E a = ivar("a");
    auto cat = [&](const std::vector<E>& args) { return app(O::Concat, {{"axis", a}}, args); };
    for (int n = 3; n <= kMaxConcatInputs; ++n) {
      std::vector<E> all;
      for (int i = 0; i < n; ++i) all.push_back(tvar("c" + std::to_string(i)));
      const std::vector<E> head(all.begin(), all.end() - 1);
      c.add("concat_peel" + std::to_string(n), M::Forward, cat(all), cat({cat(head), all.back()}));
    }
    return th.axioms;
  }();
  return axioms;
}

const std::vector<Axiom>& concat_pieces_axioms() {
  static const std::vector<Axiom> axioms = [] {
    Theory th;
    Ctx c{th};
    const E a = ivar("a"), p = ivar("p");
    for (int n = 1; n <= kMaxConcatInputs; ++n) {
      std::vector<E> all;
      for (int i = 0; i < n; ++i) all.push_back(tvar("c" + std::to_string(i)));
      c.add("concat_pieces" + std::to_string(n), M::Forward,
            app(O::Concat, {{"axis", a}, {"pieces", p}}, all),
            P(a, p, app(O::Concat, {{"axis", a}}, all)));
    }
    return th.axioms;
  }();
  return axioms;
}

void add_unary_layout_axioms(Theory& th, OpType op) {
  Ctx c{th};
  unary_layout_axioms(c, op);
}

void add_algebraic_axioms(Theory& th) {
  Ctx c{th};
  elementwise(c);
  dense(c);
  layout(c);
}

}  // namespace unity::rules::spec
