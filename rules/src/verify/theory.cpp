#include "theory.h"
#include "unity/core/ops/index_operators.h"
#include "unity/core/ops/mask_kernels.h"

#include <algorithm>

#include "attribute_schema.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {

E P(const E& k, const E& d, const E& x) {
  return app(OpType::Partition, {{"dim", k}, {"degree", d}}, {x});
}
E C(const E& k, const E& d, const E& x) {
  return app(OpType::Combine, {{"dim", k}, {"degree", d}}, {x});
}
E R(const E& d, const E& x) { return app(OpType::Replicate, {{"degree", d}}, {x}); }
E Red(const E& d, const E& x) { return app(OpType::Reduce, {{"degree", d}}, {x}); }
E AR(const E& d, const E& x) { return app(OpType::AllReduce, {{"degree", d}}, {x}); }
E Pipe(const E& k, const E& d, const E& x) {
  return app(OpType::Pipeline, {{"dim", k}, {"degree", d}}, {x});
}
E Bat(const E& k, const E& d, const E& x) {
  return app(OpType::Batch, {{"dim", k}, {"degree", d}}, {x});
}

E with_attr_vars(OpType op, const std::vector<E>& args, const std::string& prefix,
                 std::map<std::string, E>& attrs, int output) {
  for (const auto& slot : attribute_slots(op)) {
    if (slot.closed) continue;  // stays at its default: the axioms that name it say so
    const std::string name = prefix + slot.name;
    switch (slot.kind) {
      case AttrKind::Real:
        attrs[slot.name] = rvar(name);
        break;
      case AttrKind::List:
        attrs[slot.name] = lvar(name);
        break;
      default:
        attrs[slot.name] = ivar(name);
    }
  }
  return app(op, attrs, args, output);
}

const std::vector<OpType>& first_theory_unary_ops() {
  using O = OpType;
  static const std::vector<O> ops = {O::Relu,      O::Gelu,      O::Sigmoid, O::Tanh,
                                     O::Exp,       O::Sqrt,      O::Erf,     O::Identity,
                                     O::ScalarAdd, O::ScalarMul, O::Pow,     O::Dropout};
  return ops;
}

const Theory& operator_theory(OpType op) {
  static const std::vector<Theory> theories = [] {
    std::vector<Theory> all(operator_definitions().size());
    const auto& first = first_theory_unary_ops();
    for (const OperatorDefinition* d : operator_definitions()) {
      const OpType t = d->info.type;
      if (std::find(first.begin(), first.end(), t) != first.end()) continue;
      Theory& th = all[static_cast<std::size_t>(t)];
      if (d->pointwise || d->along_axis) {
        add_shape_keeping_facts(th, t);
        add_unary_compute_axioms(th, t);
      }
      // Along an axis, a transpose or reshape would move the axis: only point-wise ones commute.
      if (d->pointwise) add_unary_layout_axioms(th, t);
      if (t == OpType::Resize) add_resize_theory(th);
      if (t == OpType::ConvTranspose) add_conv_transpose_theory(th);
      if (t == OpType::Experts) add_experts_theory(th);
      if (t == OpType::LatentAttention) add_latent_attention_theory(th);
      if (t == OpType::MultiHeadAttention) add_attention_context_parallel_theory(th);
      if (t == OpType::Pad) add_pad_theory(th);
      if (t == OpType::GatherND) add_gather_nd_theory(th);
      if (t == OpType::Reduction) add_reduction_theory(th);
      if (is_index_operator(t)) add_index_axioms(th, t);
      if (is_mask_operator(t)) add_mask_axioms(th, t);
      if (d->slices) add_slice_axioms(th, t, *d->slices);
      if (t == OpType::Arithmetic) add_arithmetic_theory(th);
    }
    return all;
  }();
  return theories.at(static_cast<std::size_t>(op));
}

bool declared_with_first_theory(OpType op) { return op == OpType::MultiHeadAttention; }

namespace {

void collect_ops(const ExprPtr& e, std::vector<bool>& seen) {
  if (e.get() == nullptr) return;
  if (e->kind == Expr::Kind::Op) seen[static_cast<std::size_t>(e->op)] = true;
  for (const auto& a : e->args) collect_ops(a, seen);
  for (const auto& a : e->attrs) collect_ops(a, seen);
}

}  // namespace

std::vector<OpType> operators_named(const std::vector<const E*>& terms) {
  std::vector<bool> seen(operator_definitions().size(), false);
  for (const E* t : terms) collect_ops(t->ptr(), seen);
  std::vector<OpType> ops;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) ops.push_back(static_cast<OpType>(i));
  return ops;
}

const Theory& theory() {
  static const Theory t = [] {
    Theory th;
    add_typing_facts(th);
    add_parallel_axioms(th);
    add_compute_axioms(th);
    add_algebraic_axioms(th);
    return th;
  }();
  return t;
}

}  // namespace unity::rules::spec
