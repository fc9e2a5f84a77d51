#include "theory.h"

#include "attribute_schema.h"

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
