#include "random_instances.h"
#include "unity/core/ops/operator_definition.h"

#include <algorithm>
#include <numeric>

#include "attribute_schema.h"
#include "unity/core/ops/mask_kernels.h"

namespace unity::rules::spec {
namespace {

using K = Expr::Kind;
using O = OpType;

bool is_wrapper(O op) { return is_parallel_op(op); }

// The compute application and input slot through which a term first reads each tensor variable,
// looking through parallel operators (they keep sizes and ranks, except Pipeline/Batch, rarely
// used).
void find_uses(const ExprPtr& e, std::map<std::string, std::pair<const Expr*, int>>& uses) {
  if (e->kind != K::Op) {
    for (const auto& a : e->args) find_uses(a, uses);
    return;
  }
  if (!is_wrapper(e->op))
    for (std::size_t s = 0; s < e->args.size(); ++s) {
      const Expr* a = e->args[s].get();
      while (a->kind == K::Op && is_wrapper(a->op)) a = a->args[0].get();
      if (a->kind == K::Var && !uses.count(a->name)) uses[a->name] = {e.get(), static_cast<int>(s)};
    }
  for (const auto& a : e->args) find_uses(a, uses);
}

void find_vars(const ExprPtr& e, std::map<std::string, Sort>& vars) { collect_vars(e, vars); }

// The parallel operator applied directly to each tensor variable, where there is one: a variable a
// Reduce reads should hold partial sums, one a Combine reads should be split along that dim.
void find_wrappers(const ExprPtr& e, std::map<std::string, const Expr*>& out) {
  if (e->kind == K::Op && is_parallel_op(e->op) && !e->args.empty() && e->args[0]->kind == K::Var &&
      !out.count(e->args[0]->name))
    out[e->args[0]->name] = e.get();
  for (const auto& a : e->args) find_wrappers(a, out);
}

std::int64_t literal_or(const ExprPtr& e, std::int64_t fallback) {
  return e->kind == K::IntLit ? e->ivalue : fallback;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace

int RandomInstances::pick(const std::vector<int>& options) {
  return options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng_)];
}

std::int64_t RandomInstances::pick_size() { return pick({2, 2, 4, 4, 6}); }

ParallelValue RandomInstances::random_value(const ParallelTensorShape& shape, bool partial,
                                            std::int64_t max_index) {
  ParallelValue v;
  v.shape = shape;
  v.layout =
      partial ? ReplicaLayout::partials(shape.replica) : ReplicaLayout::copies(shape.replica);
  const bool integer = !is_floating(shape.dtype);
  auto fresh = [&] {
    DenseTensor t(shape.sizes());
    for (auto& x : t.data)
      x = integer ? static_cast<double>(
                        std::uniform_int_distribution<std::int64_t>(0, max_index - 1)(rng_))
                  : std::uniform_real_distribution<double>(-1.0, 1.0)(rng_);
    return t;
  };
  const DenseTensor first = fresh();
  for (int r = 0; r < shape.replica; ++r) v.data.push_back(partial && r > 0 ? fresh() : first);
  return v;
}

ParallelValue parallelise_randomly(ParallelValue v, std::mt19937_64& rng, RandomInstances& gen) {
  std::uniform_real_distribution<double> u(0, 1);
  ParallelTensorShape s = v.shape;
  for (int n = 0; n < 2 && s.rank() > 0 && u(rng) < 0.3; ++n) {
    const int dim = std::uniform_int_distribution<int>(0, s.rank() - 1)(rng);
    const int by = u(rng) < 0.25 ? 4 : 2;
    if (s.dims[dim].size % (by * s.dims[dim].degree) == 0) s.dims[dim].degree *= by;
  }
  if (u(rng) < 0.25) {
    s.replica *= u(rng) < 0.25 ? 4 : 2;
    const bool partial = is_floating(s.dtype) && u(rng) < 0.4;
    // Indices keep their range: copy the data rather than drawing new values.
    ParallelValue out = gen.random_value(s, partial);
    if (!partial)
      out.data.assign(static_cast<std::size_t>(s.replica), v.data[0]);
    else
      out.data[0] = v.data[0];
    return out;
  }
  v.shape = s;
  return v;
}

std::vector<ParallelTensorShape> RandomInstances::shapes_for(O op, int arity, int rank_hint) {
  auto serial = [](std::vector<std::int64_t> sizes, DataType t = DataType::Float32) {
    return ParallelTensorShape::serial(sizes, t);
  };
  auto random_sizes = [&](int rank) {
    std::vector<std::int64_t> s;
    for (int i = 0; i < rank; ++i) s.push_back(pick_size());
    return s;
  };
  const int r = rank_hint > 0 ? rank_hint : pick({1, 2, 2, 3, 3, 4});
  switch (op) {
    case O::Linear: {
      const int rx = rank_hint > 0 ? rank_hint : pick({1, 2, 2, 3});
      auto xs = random_sizes(rx);
      const std::int64_t o = pick_size();
      std::vector<ParallelTensorShape> out = {serial(xs), serial({xs.back(), o})};
      if (arity == 3) out.push_back(serial({o}));
      return out;
    }
    case O::Experts: {
      // x [tokens..., H], gates [tokens..., E], w1 and w3 [E, H, F], w2 [E, F, H].
      auto xs = random_sizes(pick({2, 2, 3}));
      const std::int64_t e = pick({2, 4}), f = pick({2, 4}), h = xs.back();
      auto gs = xs;
      gs.back() = e;
      std::vector<ParallelTensorShape> out = {serial(xs), serial(gs), serial({e, h, f}),
                                              serial({e, f, h})};
      if (arity == 5) out.push_back(serial({e, h, f}));
      return out;
    }
    case O::LatentAttention: {
      // x [n, s, E]; heads of nope 2, rope 2 and v 2 (the attributes random_attribute gives),
      // latents of 2 or 4.
      const std::int64_t n = pick({2, 4}), s = pick({2, 3}), e = pick({4, 6}), h = pick({2, 4});
      const std::int64_t ql = pick({2, 4}), kvl = pick({2, 4});
      std::vector<ParallelTensorShape> out = {serial({n, s, e})};
      if (arity == 8) {
        out.push_back(serial({e, ql}));
        out.push_back(serial({ql}));
      }
      out.push_back(serial({arity == 8 ? ql : e, h * 4}));
      out.push_back(serial({e, kvl + 2}));
      out.push_back(serial({kvl}));
      out.push_back(serial({kvl, h * 4}));
      out.push_back(serial({h * 2, e}));
      return out;
    }
    case O::MatMul:
    case O::BatchMatMul: {
      const int ra = op == O::BatchMatMul
                         ? pick({3, 4})
                         : (rank_hint > 0 ? std::max(rank_hint, 2) : pick({2, 2, 3}));
      auto as = random_sizes(ra);
      const std::int64_t n = pick_size();
      const bool shared = op == O::MatMul && (ra == 2 || pick({0, 1}) == 1);
      std::vector<std::int64_t> bs;
      if (shared) {
        bs = {as.back(), n};
      } else {
        bs = as;
        bs[ra - 2] = as.back();
        bs[ra - 1] = n;
      }
      return {serial(as), serial(bs)};
    }
    case O::Conv2D: {
      const std::int64_t g = pick({1, 1, 2});
      const std::int64_t c = g * pick({1, 2}), o = g * pick({1, 2, 4});
      const std::int64_t h = pick({4, 6}), w = pick({4, 6}), kh = pick({1, 2, 3}),
                         kw = pick({1, 2, 3});
      // 2-D only: the verifier's theory of Conv2D and Pool2D (typing_facts.cpp) is the 2-D one,
      // which their rules are proved under; 1-D and 3-D windows are the same argument per
      // spatial dim, checked by the executor's tests rather than by these instances.
      std::vector<ParallelTensorShape> out = {serial({2, c, h, w}), serial({o, c / g, kh, kw})};
      if (arity == 3) out.push_back(serial({o}));
      return out;
    }
    case O::ConvTranspose: {
      const std::int64_t g = pick({1, 1, 2});
      const std::int64_t c = g * pick({1, 2}), og = pick({1, 2});
      const int spatial = static_cast<int>(pick({1, 2, 2, 3}));
      std::vector<std::int64_t> xs{2, c}, ws{c, og};
      for (int i = 0; i < spatial; ++i) {
        xs.push_back(pick({2, 3}));
        ws.push_back(pick({1, 2, 3}));
      }
      std::vector<ParallelTensorShape> out = {serial(xs), serial(ws)};
      if (arity == 3) out.push_back(serial({og * g}));
      return out;
    }
    case O::Pool2D:
      return {serial({2, pick_size(), pick({4, 6}), pick({4, 6})})};
    case O::BatchNorm: {
      auto xs = random_sizes(std::max(r, 2));
      return {serial(xs), serial({xs[1]}), serial({xs[1]})};
    }
    case O::LayerNorm: {
      auto xs = random_sizes(r);
      if (arity == 1) return {serial(xs)};
      return {serial(xs), serial({xs.back()}), serial({xs.back()})};
    }
    case O::MultiHeadAttention: {
      const std::int64_t n = pick({2, 4}), s = pick({2, 4}), e = pick({4, 6, 8});
      std::vector<ParallelTensorShape> out(3, serial({n, s, e}));
      for (int i = 0; i < 4; ++i) out.push_back(serial({e, e}));
      return out;
    }
    case O::Embedding:
    case O::EmbeddingBag: {
      auto is = op == O::EmbeddingBag ? std::vector<std::int64_t>{pick_size(), pick({1, 2, 3})}
                                      : random_sizes(pick({1, 2}));
      return {serial(is, DataType::Int64), serial({pick({4, 6}), pick_size()})};
    }
    case O::TopK:
    case O::ArgMax:
    case O::ArgMin:
    case O::GatherElements:
    case O::ScatterElements:
    case O::OneHot: {
      // Every dim of one size, so that any axis (and k up to 2) fits and indices drawn below
      // that size are in range along any of them.
      const std::vector<std::int64_t> xs(static_cast<std::size_t>(r), pick({2, 4}));
      if (op == O::OneHot) return {serial(xs, DataType::Int64)};
      if (op == O::GatherElements) return {serial(xs), serial(xs, DataType::Int64)};
      if (op == O::ScatterElements) return {serial(xs), serial(xs, DataType::Int64), serial(xs)};
      return {serial(xs)};
    }
    case O::GatherND: {
      // data [v, v, s] and indices [v, j, 1]: batch_dims 0 or 1 both fit, and indices drawn below
      // v are in range.
      const std::int64_t v = pick({2, 4});
      return {serial({v, v, pick_size()}), serial({v, pick({1, 3}), 1}, DataType::Int64)};
    }
    case O::SoftmaxCrossEntropy: {
      auto ls = random_sizes(std::max(r, 2));
      auto labels = ls;
      labels.pop_back();
      return {serial(ls), serial(labels, DataType::Int64)};
    }
    case O::Add:
    case O::Sub:
    case O::Mul:
    case O::Div:
    case O::Arithmetic:
    case O::MSELoss:
    case O::Concat: {
      auto xs = random_sizes(r);
      std::vector<ParallelTensorShape> out(static_cast<std::size_t>(arity), serial(xs));
      if (op == O::Concat && r > 0)
        for (auto& s : out) s.dims[0].size = pick_size();  // often concatenated along 0
      if (op != O::MSELoss && op != O::Concat && arity == 2 && r > 1 && pick({0, 0, 0, 1}) == 1)
        out[static_cast<std::size_t>(pick({0, 1}))] =
            serial(std::vector<std::int64_t>(xs.begin() + 1, xs.end()));  // a broadcast bias
      return out;
    }
    default:
      if (is_mask_operator(op)) {
        // Where's condition and the logic's operands are masks (nonzero: true); comparisons and
        // Cast read floats.
        const auto xs = random_sizes(r);
        std::vector<ParallelTensorShape> out(static_cast<std::size_t>(std::max(arity, 1)),
                                             serial(xs));
        if (op == O::Logical) out.assign(out.size(), serial(xs, DataType::Bool));
        if (op == O::Where) out[0] = serial(xs, DataType::Bool);
        return out;
      }
      if (const auto example = operator_definition(op).example_inputs)
        return example(random_sizes(r));
      return std::vector<ParallelTensorShape>(static_cast<std::size_t>(std::max(arity, 1)),
                                              serial(random_sizes(r)));
  }
}

std::map<std::string, Concrete> RandomInstances::tensors_for(const std::vector<ExprPtr>& terms) {
  std::map<std::string, std::pair<const Expr*, int>> uses;
  std::map<std::string, Sort> vars;
  for (const auto& t : terms) {
    find_uses(t, uses);
    find_vars(t, vars);
  }
  std::map<std::string, const Expr*> wrappers;
  for (const auto& t : terms) find_wrappers(t, wrappers);
  std::map<const Expr*, std::vector<ParallelTensorShape>> group_shapes;
  std::map<std::string, Concrete> env;
  for (const auto& [name, sort] : vars) {
    if (sort != Sort::Tensor) continue;
    ParallelTensorShape shape;
    std::int64_t max_index = 4;
    bool serial_only = false;
    auto it = uses.find(name);
    if (it != uses.end()) {
      const Expr* app = it->second.first;
      auto g = group_shapes.find(app);
      if (g == group_shapes.end())
        g = group_shapes.emplace(app, shapes_for(app->op, static_cast<int>(app->args.size())))
                .first;
      shape = g->second.at(static_cast<std::size_t>(it->second.second));
      if (app->op == O::Embedding || app->op == O::EmbeddingBag)
        max_index = g->second[1].dims[0].size;
      if (app->op == O::SoftmaxCrossEntropy) max_index = g->second[0].dims.back().size;
      if (app->op == O::GatherElements || app->op == O::ScatterElements || app->op == O::OneHot ||
          app->op == O::GatherND)
        max_index = g->second[0].dims.empty() ? 1 : g->second[0].dims[0].size;
      // Inputs parallelised independently almost never agree on every degree past a few, and a
      // Concat's must: its long forms (the peel and pieces axioms) are checked on serial inputs.
      serial_only = app->op == O::Concat && app->args.size() > 8;
    } else {
      shape = shapes_for(O::Identity, 1)[0];
    }
    ParallelValue v = random_value(shape, false, max_index);
    if (!serial_only) v = parallelise_randomly(std::move(v), rng_, *this);
    // Half the time, give the variable what its parallel operator needs.
    auto w = wrappers.find(name);
    if (w != wrappers.end() && pick({0, 1}) == 1) {
      const Expr& op = *w->second;
      const int degree = static_cast<int>(literal_or(op.attrs.back(), pick({2, 2, 4})));
      if ((op.op == O::Reduce || op.op == O::AllReduce) && is_floating(v.shape.dtype) &&
          degree > 0) {
        ParallelTensorShape ps = v.shape;
        ps.replica = degree * pick({1, 1, 2});
        v = random_value(ps, true, max_index);
      } else if (op.op == O::Combine && v.shape.rank() > 0 && degree > 0) {
        std::int64_t dim = literal_or(op.attrs.front(), pick({0, 1, 2, 3}) % v.shape.rank());
        dim = dim < 0 ? dim + v.shape.rank() : dim;
        if (dim >= 0 && dim < v.shape.rank() &&
            v.shape.dims[static_cast<std::size_t>(dim)].size % degree == 0)
          v.shape.dims[static_cast<std::size_t>(dim)].degree = degree;
      }
    }
    env[name] = std::move(v);
  }
  return env;
}

Binder RandomInstances::binder() {
  return
      [this](const Expr& var, O op, int slot, const std::vector<const ParallelValue*>& inputs,
             const Attributes& earlier) { return bind_attribute(var, op, slot, inputs, earlier); };
}

std::optional<Concrete> RandomInstances::bind_attribute(const Expr& var, O op, int slot,
                                                        const std::vector<const ParallelValue*>& in,
                                                        const Attributes& earlier) {
  if (slot < 0) {
    if (var.sort == Sort::Int) return Concrete{std::int64_t{pick({-2, -1, 0, 1, 2, 3})}};
    if (var.sort == Sort::Real)
      return Concrete{std::uniform_real_distribution<double>(-2, 2)(rng_)};
    return std::nullopt;
  }
  const AttrSlot& s = attribute_slots(op).at(static_cast<std::size_t>(slot));
  const ParallelTensorShape* x = in.empty() ? nullptr : &in[0]->shape;
  const int r = x ? x->rank() : 2;
  auto I = [](std::int64_t v) { return std::optional<Concrete>(Concrete{v}); };
  auto L = [](std::vector<std::int64_t> v) {
    return std::optional<Concrete>(Concrete{std::move(v)});
  };
  auto choose = [&](const std::vector<std::int64_t>& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng_)];
  };
  const std::string& n = s.name;
  if (n == "dim" || n == "axis") {
    if (op == O::Flatten) return I(std::uniform_int_distribution<int>(0, r)(rng_));
    if (r == 0) return I(0);
    return I(std::uniform_int_distribution<int>(-r, r - 1)(rng_));
  }
  if (n == "degree") {
    // Prefer degrees that make the operator defined on these inputs.
    // Degree 1 now and then: it is a degree like any other.
    if (std::uniform_int_distribution<int>(0, 9)(rng_) == 0) return I(1);
    std::vector<std::int64_t> ok = {2, 2, 3};
    if (x && r > 0 && (op == O::Partition || op == O::Combine || op == O::Pipeline)) {
      // The dim comes first: choose a degree that divides what that dim allows.
      std::int64_t dim = earlier.get_int("dim", 0);
      dim = dim < 0 ? dim + r : dim;
      if (dim >= 0 && dim < r) {
        const auto& d = x->dims[static_cast<std::size_t>(dim)];
        std::vector<std::int64_t> cands;
        for (auto v : op == O::Combine ? divisors(d.degree) : divisors(d.size / d.degree))
          if (v > 1) cands.push_back(v);
        if (!cands.empty()) ok = cands;
      }
    } else if (x && (op == O::Reduce || op == O::AllReduce)) {
      ok.clear();
      for (auto v : divisors(x->replica))
        if (v > 1) ok.push_back(v);
      if (ok.empty()) ok = {2};
    } else if (x && op == O::Batch) {
      ok = divisors(in[0]->stages);
    }
    return I(choose(ok));
  }
  if (n == "pieces") {
    // A number of pieces that cuts the concatenated axis between inputs (1 always does), more
    // than one when the inputs allow it.
    std::int64_t axis = earlier.get_int("axis", 0);
    axis = axis < 0 ? axis + r : axis;
    if (!x || axis < 0 || axis >= r) return I(1);
    std::vector<std::int64_t> ends;
    for (const auto* v : in)
      ends.push_back((ends.empty() ? 0 : ends.back()) + v->shape.dims[axis].size);
    const std::int64_t total = ends.back();
    std::vector<std::int64_t> ok;
    for (std::int64_t p = 2; p <= static_cast<std::int64_t>(in.size()); ++p) {
      if (total % p != 0) continue;
      bool aligned = true;
      for (std::int64_t k = 1; k < p; ++k)
        aligned = aligned && std::find(ends.begin(), ends.end(), k * (total / p)) != ends.end();
      if (aligned) ok.push_back(p);
    }
    return I(ok.empty() || std::uniform_int_distribution<int>(0, 9)(rng_) == 0 ? 1 : choose(ok));
  }
  if (n == "out_features") return I(in.size() > 1 ? in[1]->shape.dims.back().size : pick_size());
  // Window lists have one entry per spatial dim of x [N, C, spatial...] (two when unknown).
  const int spatial = x && r >= 3 && r <= 5 ? r - 2 : 2;
  auto window = [&](const std::vector<std::int64_t>& values) {
    std::vector<std::int64_t> v;
    for (int i = 0; i < spatial; ++i) v.push_back(choose(values));
    return L(v);
  };
  const bool weighted = op == O::Conv2D || op == O::ConvTranspose;
  if (n == "out_channels") {
    if (op == O::ConvTranspose && in.size() > 1 && in[1]->shape.rank() >= 3) {
      // w [C, O/groups, k...]: the bias says O; else a groups that divides C.
      if (in.size() == 3) return I(in[2]->shape.dims[0].size);
      const std::int64_t groups = x->dims[1].size % 2 == 0 ? choose({1, 1, 2}) : 1;
      return I(in[1]->shape.dims[1].size * groups);
    }
    return I(in.size() > 1 ? in[1]->shape.dims[0].size : 2);
  }
  if (n == "groups") {
    if (op == O::ConvTranspose && in.size() > 1 && in[1]->shape.rank() >= 3)
      return I(std::max<std::int64_t>(1, earlier.get_int("out_channels", 1) /
                                             std::max<std::int64_t>(1, in[1]->shape.dims[1].size)));
    return I(in.size() > 1 && in[1]->shape.rank() >= 3 && in[1]->shape.dims[1].size > 0
                 ? std::max<std::int64_t>(1, x->dims[1].size / in[1]->shape.dims[1].size)
                 : 1);
  }
  if (n == "kernel") {
    if (weighted && in.size() > 1 && in[1]->shape.rank() >= 3) {
      std::vector<std::int64_t> k;
      for (int i = 2; i < in[1]->shape.rank(); ++i) k.push_back(in[1]->shape.dims[i].size);
      return L(k);
    }
    return window({1, 2});
  }
  if (n == "stride") return window({1, 1, 2});
  if (n == "padding") return window({0, 0, 1});
  if (n == "dilation") return L(std::vector<std::int64_t>(static_cast<std::size_t>(spatial), 1));
  if (n == "output_padding") return window({0, 0, 1});
  if (n == "mlp") return I(in.size() == 5 ? 0 : 1);
  if (n == "top_k") return I(1);
  if (n == "activation") return I(choose({0, 0, 0, 1, 2, 3, 4}));
  if (n == "pool" || n == "aggregate" || n == "keepdims") return I(choose({0, 1}));
  // The index operators: k and depth within the (equal) sizes shapes_for gives them.
  if (n == "k") return I(choose({1, 2}));
  if (n == "depth") return I(choose({2, 3, 4}));
  // Reduction: every kind but log_sum, whose log of a negative sum would compare NaN with NaN.
  if (n == "reduction" && op == O::Reduction) return I(choose({0, 1, 2, 3, 4, 5, 7}));
  if (n == "largest" || n == "select_last_index" || n == "reduction") return I(choose({0, 1}));
  // The mask operators' enums (attribute_schema.cpp's order): any comparison, the logic of as many
  // operands as the instance has (not: one), any type.
  if (n == "comparison") return I(choose({0, 1, 2, 3, 4}));
  // Arithmetic (arithmetic.h's order): max, min, sum, mean of any number of operands; prelu, mod
  // and fmod of two. Not pow: a negative base (values are drawn in [-1, 1]) gives NaN.
  if (n == "function" && op == O::Arithmetic)
    return I(in.size() == 2 ? choose({0, 1, 2, 3, 4, 5, 6}) : choose({0, 1, 2, 3}));
  if (n == "logic") return I(in.size() == 1 ? 3 : choose({0, 1, 2}));
  if (n == "to") return I(choose({0, 1, 2, 3, 4, 5}));
  if (n == "off_value" || n == "on_value")
    return Concrete{static_cast<double>(choose({-1, 0, 1, 2})) / 2.0};
  if (n == "epsilon") return Concrete{1e-5};
  if (n == "scalar") return Concrete{static_cast<double>(choose({0, 1, 2, 2, 3, -3})) / 2.0};
  if (n == "rate") return Concrete{choose({0, 1}) * 0.5};
  if (n == "normalized_dims") {
    if (in.size() == 3) return I(in[1]->shape.rank());
    return I(std::uniform_int_distribution<int>(1, std::max(1, r))(rng_));
  }
  // LatentAttention's head widths as shapes_for draws them, its heads from w_o's rows.
  if (n == "qk_nope_head_dim" || n == "qk_rope_head_dim" || n == "v_head_dim") return I(2);
  if (n == "num_heads" && op == O::LatentAttention && !in.empty())
    return I(in.back()->shape.dims[0].size / 2);
  if (n == "rotary_base") return Concrete{10000.0};
  if ((n == "causal" || n == "fused") && op == O::LatentAttention) return I(choose({0, 1}));
  if (n == "num_heads") {
    const std::int64_t e = x && x->rank() == 3 ? x->dims[2].size : 4;
    return I(choose(divisors(e)));
  }
  if (n == "num_entries") return I(in.size() > 1 ? in[1]->shape.dims[0].size : 4);
  if (n == "embedding_dim") return I(in.size() > 1 ? in[1]->shape.dims.back().size : 4);
  if (n == "perm") {
    std::vector<std::int64_t> p(static_cast<std::size_t>(r));
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), rng_);
    return L(p);
  }
  if (n == "axes") {
    std::vector<std::int64_t> axes;
    for (int d = 0; d < r; ++d)
      if (choose({0, 1})) axes.push_back(d);
    if (axes.empty() && r > 0) axes.push_back(std::uniform_int_distribution<int>(0, r - 1)(rng_));
    return L(axes);
  }
  if (n == "shape" && x) {
    // Keep the leading dim, merge the rest (what reshapes in models mostly do).
    std::int64_t rest = 1;
    for (int d = 1; d < r; ++d) rest *= x->dims[d].size;
    if (r <= 1) return L({x->num_elements()});
    return L({x->dims[0].size, rest});
  }
  if (n == "batch_dims") return I(choose({0, 1}));
  if (n == "pads" && op == O::Pad) {
    // Begins then ends; about half the dims unpadded (the ones rules may split).
    std::vector<std::int64_t> pads(static_cast<std::size_t>(2 * r), 0);
    for (int d = 0; d < r; ++d)
      if (choose({0, 1})) {
        pads[static_cast<std::size_t>(d)] = choose({0, 1, 2});
        pads[static_cast<std::size_t>(d + r)] = choose({1, 3});
      }
    return L(pads);
  }
  if (n == "sizes" && op == O::Resize) {
    // One output size per listed axis; now and then the axis's own size (the identity).
    std::vector<std::int64_t> sizes;
    for (auto a : earlier.get_ints("axes", {})) {
      const bool own = x && a >= 0 && a < r && choose({0, 0, 1});
      sizes.push_back(own ? x->dims[static_cast<std::size_t>(a)].size : choose({1, 3, 5, 8}));
    }
    return L(sizes);
  }
  if (n == "sizes" && x && r > 0) {
    std::int64_t axis = earlier.get_int("axis", 0);
    axis = axis < 0 ? axis + r : axis;
    const std::int64_t size =
        axis >= 0 && axis < r ? x->dims[static_cast<std::size_t>(axis)].size : 2;
    if (size >= 3 && choose({0, 1})) return L({1, 1, size - 2});
    if (size >= 2) return L({size / 2, size - size / 2});
    return L({1});
  }
  if (var.sort == Sort::Int) return I(choose({0, 1, 2}));
  if (var.sort == Sort::Real) return Concrete{0.5};
  return std::nullopt;
}

}  // namespace unity::rules::spec
