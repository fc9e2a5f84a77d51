#pragma once
// Concrete evaluation of spec terms with the evaluator: the model the axioms are checked against.
// An undefined tensor (the evaluator's error) is std::monostate, the logic's "not ok".
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "spec_expr.h"
#include "unity/core/pcg/operator.h"
#include "unity/rules/parallel_value.h"

namespace unity::rules::spec {

using Concrete = std::variant<std::monostate, ParallelValue, std::int64_t, double,
                              std::vector<std::int64_t>, bool>;

// Binds a variable met unbound while evaluating: `op`/`slot` name the attribute slot it fills (slot
// -1 for a tensor argument), `inputs` are the operator's already evaluated tensor arguments and
// `earlier` its attributes of earlier slots.
using Binder = std::function<std::optional<Concrete>(
    const Expr& var, OpType op, int slot, const std::vector<const ParallelValue*>& inputs,
    const Attributes& earlier)>;

class SpecEvaluator {
 public:
  SpecEvaluator(std::map<std::string, Concrete>& env, Binder binder = {})
      : env_(env), binder_(std::move(binder)) {}

  Concrete eval(const ExprPtr& e);
  // The core operator an application stands for (attributes evaluated; inputs not evaluated).
  std::optional<Operator> to_operator(const Expr& app,
                                      const std::vector<const ParallelValue*>& inputs);
  const std::string& last_error() const { return error_; }

 private:
  Concrete var(const Expr& e, OpType op, int slot, const std::vector<const ParallelValue*>& inputs,
               const Attributes& earlier = {});

  std::map<std::string, Concrete>& env_;
  Binder binder_;
  std::string error_;
};

std::int64_t as_int(const Concrete& c);
bool as_bool(const Concrete& c);
std::string to_string(const Concrete& c);

}  // namespace unity::rules::spec
