#include "unity/rules/axiom_check.h"

#include <fmt/format.h>

#include "random_instances.h"
#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules {
namespace {

using namespace spec;

std::vector<OpType> extended_first_theory_ops() {
  std::vector<OpType> out;
  for (const OperatorDefinition* d : operator_definitions())
    if (declared_with_first_theory(d->info.type)) out.push_back(d->info.type);
  return out;
}

bool defined(const Concrete& c) { return !std::holds_alternative<std::monostate>(c); }

bool equal(const Concrete& a, const Concrete& b) {
  const auto* x = std::get_if<ParallelValue>(&a);
  const auto* y = std::get_if<ParallelValue>(&b);
  return x && y && approx_equal(*x, *y, 1e-7);
}

std::string describe_env(const std::map<std::string, Concrete>& env) {
  std::string s;
  for (const auto& [name, v] : env)
    s += fmt::format("{}{} = {}", s.empty() ? "" : ", ", name, to_string(v));
  return s;
}

// One trial of an axiom: nullopt when its premise did not hold, else the violation ("" when none).
std::optional<std::string> trial(const Axiom& ax, RandomInstances& gen) {
  std::vector<ExprPtr> terms = {ax.lhs.ptr(), ax.rhs.ptr()};
  if (ax.trigger) terms.insert(terms.begin(), ax.trigger.ptr());
  auto env = gen.tensors_for(terms);
  SpecEvaluator ev(env, gen.binder());
  const Concrete trig = ax.trigger ? ev.eval(ax.trigger.ptr()) : Concrete{};
  const Concrete l = ev.eval(ax.lhs.ptr());
  const Concrete r = ev.eval(ax.rhs.ptr());
  bool premise = false;
  switch (ax.mode) {
    case Axiom::Mode::Forward:
      premise = defined(l);
      break;
    case Axiom::Mode::Both:
      premise = defined(l) || defined(r);
      break;
    case Axiom::Mode::Joint:
      premise = defined(l) && defined(r);
      break;
    case Axiom::Mode::Trigger:
      premise = defined(trig);
      break;
  }
  if (!premise) return std::nullopt;
  if (ax.guard) {
    try {
      if (!as_bool(ev.eval(ax.guard.ptr()))) return std::nullopt;
    } catch (const std::logic_error&) {
      return std::nullopt;  // the guard reads a variable only an undefined side binds
    }
  }
  if (!defined(l) || !defined(r))
    return fmt::format("{} is undefined ({}) where {} is defined; {}", defined(l) ? "rhs" : "lhs",
                       ev.last_error(), defined(l) ? "lhs" : "rhs", describe_env(env));
  if (!equal(l, r))
    return fmt::format("sides differ: {}; {}",
                       describe_difference(std::get<ParallelValue>(l), std::get<ParallelValue>(r)),
                       describe_env(env));
  return std::string();
}

std::optional<std::string> trial(const Fact& f, RandomInstances& gen) {
  std::vector<ExprPtr> terms = {f.trigger.ptr()};
  if (f.trigger2) terms.push_back(f.trigger2.ptr());
  auto env = gen.tensors_for(terms);
  SpecEvaluator ev(env, gen.binder());
  // A fact about a defined term says nothing of undefined ones: count only defined triggers, found
  // under the trigger's operator application.
  const ExprPtr& tensor = f.trigger->sort == Sort::Tensor ? f.trigger.ptr() : f.trigger->args[0];
  if (!defined(ev.eval(tensor))) return std::nullopt;
  if (f.trigger2) ev.eval(f.trigger2.ptr());  // binds its variables
  if (as_bool(ev.eval(f.holds.ptr()))) return std::string();
  return fmt::format("does not hold: {}", describe_env(env));
}

template <typename T>
AxiomCheck check(const T& item, bool is_fact, const AxiomCheckOptions& o, RandomInstances& gen) {
  AxiomCheck c;
  c.name = item.name;
  c.is_fact = is_fact;
  while (c.trials < o.max_trials && c.instances < o.enough) {
    ++c.trials;
    auto r = trial(item, gen);
    if (!r) continue;
    ++c.instances;
    if (!r->empty()) {
      if (c.violations++ == 0) c.counterexample = *r;
    }
  }
  return c;
}

}  // namespace

std::vector<AxiomCheck> check_axioms(const AxiomCheckOptions& options) {
  RandomInstances gen(options.seed);
  std::vector<AxiomCheck> out;
  const Theory& t = theory();
  for (const auto& ax : t.axioms)
    if (ax.name.find(options.only) != std::string::npos)
      out.push_back(check(ax, false, options, gen));
  for (const auto* extra : {&concat_peel_axioms(), &concat_pieces_axioms()})
    for (const auto& ax : *extra)
      if (ax.name.find(options.only) != std::string::npos)
        out.push_back(check(ax, false, options, gen));
  for (const auto& f : t.facts)
    if (f.name.find(options.only) != std::string::npos) out.push_back(check(f, true, options, gen));
  // The axioms added since to operators of the first theory (last, so that the checks above draw
  // the instances they always drew).
  for (OpType op : extended_first_theory_ops())
    for (const auto& ax : operator_theory(op).axioms)
      if (ax.name.find(options.only) != std::string::npos)
        out.push_back(check(ax, false, options, gen));
  return out;
}

int axiom_count() {
  std::size_t extended = 0;
  for (OpType op : extended_first_theory_ops()) extended += operator_theory(op).axioms.size();
  return static_cast<int>(spec::theory().axioms.size() + spec::concat_peel_axioms().size() +
                          spec::concat_pieces_axioms().size() + extended);
}
int fact_count() { return static_cast<int>(spec::theory().facts.size()); }

}  // namespace unity::rules
