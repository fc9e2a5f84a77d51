// Parameter choices and constraints of a rule at one match.
#include <charconv>

#include "unity/core/rules/substitution.h"

namespace unity {
namespace {

using Params = std::map<std::string, std::int64_t>;

// The tensor a rule input or source node name stands for at this match.
std::optional<TensorRef> tensor_of(const Match& m, const std::string& name) {
  if (auto it = m.inputs.find(name); it != m.inputs.end()) return it->second;
  if (auto it = m.nodes.find(name); it != m.nodes.end()) return TensorRef{it->second, 0};
  return std::nullopt;
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> evaluate(const std::string& operand, const Graph& g, const Match& m,
                                     const Params& params);

// A sum of terms: "rank(x)-$nd", "last(a)-1". Splits at + and - outside parentheses.
std::optional<std::int64_t> evaluate_sum(const std::string& text, const Graph& g, const Match& m,
                                         const Params& params) {
  int depth = 0;
  for (std::size_t i = text.size(); i-- > 1;) {
    const char c = text[i];
    if (c == ')') ++depth;
    if (c == '(') --depth;
    if (depth == 0 && (c == '+' || c == '-')) {
      const auto a = evaluate_sum(text.substr(0, i), g, m, params);
      const auto b = evaluate(text.substr(i + 1), g, m, params);
      if (!a || !b) return std::nullopt;
      return c == '+' ? *a + *b : *a - *b;
    }
  }
  return evaluate(text, g, m, params);
}

std::optional<std::int64_t> evaluate(const std::string& operand, const Graph& g, const Match& m,
                                     const Params& params) {
  if (operand.empty()) return std::nullopt;
  if (auto v = parse_int(operand)) return v;
  if (operand[0] == '$') {
    auto it = m.symbols.find(operand.substr(1));
    if (it == m.symbols.end()) return std::nullopt;
    if (auto* i = std::get_if<std::int64_t>(&it->second)) return *i;
    return std::nullopt;
  }
  if (auto it = params.find(operand); it != params.end()) return it->second;
  const auto open = operand.find('(');
  if (open == std::string::npos) return std::nullopt;
  const std::string fn = operand.substr(0, open);
  const std::string args = operand.substr(open + 1, operand.size() - open - 2);
  const auto comma = args.find(',');
  const auto t = tensor_of(m, args.substr(0, comma));
  if (!t) return std::nullopt;
  const ParallelTensorShape& s = g.shape(*t);
  if (fn == "rank") return s.rank();
  if (fn == "last") return s.rank() - 1;
  if (fn == "replica") return s.replica;
  if (comma == std::string::npos) return std::nullopt;
  const auto k = evaluate(args.substr(comma + 1), g, m, params);
  if (!k || *k < -s.rank() || *k >= s.rank()) return std::nullopt;
  const auto& dim = s.dims[static_cast<std::size_t>(*k < 0 ? *k + s.rank() : *k)];
  if (fn == "size") return dim.size;
  if (fn == "degree") return dim.degree;
  return std::nullopt;
}

}  // namespace

std::vector<Params> parameter_choices(const Graph& graph, const Match& match,
                                      const std::vector<std::int64_t>& degrees) {
  std::vector<Params> out{{}};
  for (const auto& p : match.rule->parameter_domains) {
    std::vector<std::int64_t> values;
    if (p.domain == RuleParameter::Domain::Degree) {
      // Only the degrees the rule's proof covers.
      for (auto d : degrees)
        if (match.rule->proved.covers_degree(d)) values.push_back(d);
    } else if (const auto t = tensor_of(match, p.of)) {
      for (int k = 0; k < graph.shape(*t).rank(); ++k) values.push_back(k);
    }
    std::vector<Params> next;
    for (const auto& partial : out)
      for (auto v : values) {
        auto m = partial;
        m[p.name] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

bool constraints_hold(const Graph& graph, const Match& match, const Params& params) {
  // Outside the proved scope the rule is not known to hold: as a failed constraint.
  if (!within_proved_scope(match, params)) return false;
  for (const auto& c : match.rule->constraints) {
    const auto a = evaluate_sum(c.a, graph, match, params);
    const auto b = evaluate_sum(c.b, graph, match, params);
    if (!a || !b) return false;
    switch (c.kind) {
      case RuleConstraint::Kind::Equal:
        if (*a != *b) return false;
        break;
      case RuleConstraint::Kind::NotEqual:
        if (*a == *b) return false;
        break;
      case RuleConstraint::Kind::Divides:
        if (*a == 0 || *b % *a != 0) return false;
        break;
      case RuleConstraint::Kind::Less:
        if (*a >= *b) return false;
        break;
    }
  }
  return true;
}

}  // namespace unity
