#include "concrete_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "random_instances.h"
#include "spec_eval.h"
#include "unity/core/errors.h"
#include "unity/core/rules/substitution.h"
#include "unity/rules/evaluator.h"

namespace unity::rules::spec {
namespace {

struct Instance {
  Graph graph;
  std::map<NodeId, ParallelValue> given;
  std::map<std::string, NodeId> source_ids;
  std::vector<NodeId> sinks;
  std::string inputs;  // described, for counterexamples
};

// Input -> Partition per split dim -> Replicate: a tensor of the value's parallel shape, whose
// value the evaluator is then given directly (it may hold partial sums no operator chain made).
TensorRef add_input(Instance& inst, const std::string& name, const ParallelValue& v) {
  Graph& g = inst.graph;
  TensorRef t = g.add_input(name, v.shape.sizes(), v.shape.dtype);
  inst.given[t.node] = ParallelValue::serial(v.data[0], v.shape.dtype);
  for (int d = 0; d < v.shape.rank(); ++d)
    if (v.shape.dims[d].degree > 1) {
      Operator p{OpType::Partition,
                 {{"dim", std::int64_t{d}}, {"degree", std::int64_t{v.shape.dims[d].degree}}},
                 name + ".p"};
      t = {g.add(std::move(p), {t}), 0};
    }
  if (v.shape.replica > 1) {
    Operator r{OpType::Replicate, {{"degree", std::int64_t{v.shape.replica}}}, name + ".r"};
    t = {g.add(std::move(r), {t}), 0};
  }
  inst.given[t.node] = v;
  return t;
}

std::optional<Instance> build(const Rule& rule, const RuleTerms& terms,
                              std::map<std::string, Concrete>& env, SpecEvaluator& ev) {
  Instance inst;
  std::map<std::string, TensorRef> refs;
  for (const auto& in : rule.inputs) {
    const auto& v = std::get<ParallelValue>(env.at(in));
    refs[in] = add_input(inst, in, v);
    inst.inputs += fmt::format("{}{} = {}", inst.inputs.empty() ? "" : ", ", in, v.describe());
  }
  auto ref = [&](const std::string& r) -> TensorRef {
    const auto [name, index] = rule_ref(r);
    if (auto it = inst.source_ids.find(name); it != inst.source_ids.end())
      return {it->second, index};
    return refs.at(name);
  };
  try {
    for (const auto& n : rule.source.nodes) {
      std::vector<TensorRef> in;
      std::vector<const ParallelValue*> unused;
      for (const auto& i : n.inputs) in.push_back(ref(i));
      auto op = ev.to_operator(*terms.source_nodes.at(n.name).ptr(), unused);
      op->name = n.name;
      inst.source_ids[n.name] = inst.graph.add(std::move(*op), in);
    }
    for (const auto& o : rule.source.outputs) {
      // Identity is point-wise on floats; an integer or Bool output (ArgMax's, a mask) is read
      // through a Reshape to its own sizes.
      const ParallelTensorShape& shape = inst.graph.shape(ref(o));
      Operator sink{OpType::Identity, {}, "sink"};
      if (!is_floating(shape.dtype))
        sink = Operator{OpType::Reshape, {{"shape", shape.sizes()}}, "sink"};
      inst.sinks.push_back(inst.graph.add(std::move(sink), {ref(o)}));
    }
  } catch (const InputError&) {
    return std::nullopt;
  } catch (const std::logic_error&) {
    return std::nullopt;
  }
  return inst;
}

const Match* our_match(const std::vector<Match>& matches, const Instance& inst) {
  for (const auto& m : matches) {
    bool same = true;
    for (const auto& [name, id] : inst.source_ids)
      same = same && m.nodes.count(name) && m.nodes.at(name) == id;
    if (same) return &m;
  }
  return nullptr;
}

std::string describe_case(const Instance& inst, const std::map<std::string, std::int64_t>& params,
                          const Match& m) {
  std::string s = "inputs " + inst.inputs;
  if (!params.empty()) {
    std::vector<std::string> p;
    for (const auto& [k, v] : params) p.push_back(fmt::format("{} = {}", k, v));
    s += fmt::format("; parameters {}", fmt::join(p, ", "));
  }
  if (!m.symbols.empty()) {
    std::vector<std::string> p;
    for (const auto& [k, v] : m.symbols)
      p.push_back(fmt::format("${} = {}", k, unity::to_string(v)));
    s += fmt::format("; symbols {}", fmt::join(p, ", "));
  }
  return s;
}

}  // namespace

ConcreteOutcome concrete_check(const Rule& rule, const Rule& fixed, const RuleTerms& terms,
                               const ConcreteOptions& o) {
  ConcreteOutcome out;
  RandomInstances gen(o.seed);
  std::vector<ExprPtr> sources;
  for (const auto& t : terms.source_outputs) sources.push_back(t.ptr());
  for (int trial = 0; trial < o.trials && out.compared < o.enough; ++trial) {
    auto env = gen.tensors_for(sources);
    SpecEvaluator ev(env, gen.binder());
    bool defined = true;
    for (const auto& s : sources)
      defined = defined && !std::holds_alternative<std::monostate>(ev.eval(s));
    if (!defined) continue;
    auto inst = build(fixed, terms, env, ev);
    if (!inst) continue;
    const auto matches = find_matches(inst->graph, rule);
    const Match* m = our_match(matches, *inst);
    if (!m) continue;
    const auto before = evaluate_graph(inst->graph, inst->given);
    if (!before.ok()) continue;  // the source reads its inputs meaninglessly: not a use of the rule
    for (const auto& params : parameter_choices(inst->graph, *m, o.degrees)) {
      auto next = apply_substitution(inst->graph, *m, params, ReplicaMeaning::Unchecked);
      if (!next) continue;
      ++out.compared;
      const auto after = evaluate_graph(*next, inst->given);
      if (!after.ok()) {
        out.refuted = true;
        out.counterexample =
            fmt::format("{}: the target is undefined where the source is defined ({})",
                        describe_case(*inst, params, *m), after.error);
        return out;
      }
      for (std::size_t i = 0; i < inst->sinks.size(); ++i) {
        const auto& a = before.values.at(inst->sinks[i]).at(0);
        const auto& b = after.values.at(inst->sinks[i]).at(0);
        if (!approx_equal(a, b, 1e-7)) {
          out.refuted = true;
          out.counterexample =
              fmt::format("{}: output {} differs, {}", describe_case(*inst, params, *m), i,
                          describe_difference(a, b));
          return out;
        }
      }
    }
  }
  return out;
}

}  // namespace unity::rules::spec
