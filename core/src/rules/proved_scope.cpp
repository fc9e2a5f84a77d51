#include "unity/core/rules/proved_scope.h"

#include <charconv>

#include <fmt/format.h>

#include "unity/core/rules/substitution.h"

namespace unity {
namespace {

constexpr std::string_view kAll = "all degrees and shapes";
constexpr std::string_view kDegreesUpTo = "degrees up to ";

std::optional<std::int64_t> parse_number(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

bool ProvedScope::includes(const ProvedScope& inner) const {
  const bool degrees = !max_degree || (inner.max_degree && *inner.max_degree <= *max_degree);
  const bool variadic =
      !max_variadic || (inner.max_variadic && *inner.max_variadic <= *max_variadic);
  return degrees && variadic;
}

std::optional<ProvedScope> parse_proved_scope(std::string_view text) {
  ProvedScope scope;
  text = trim(text);
  if (text.empty()) return scope;
  std::string_view degrees = text, variadic;
  if (const auto semicolon = text.find(';'); semicolon != std::string_view::npos) {
    degrees = trim(text.substr(0, semicolon));
    variadic = trim(text.substr(semicolon + 1));
  }
  if (degrees.rfind(kDegreesUpTo, 0) == 0) {
    scope.max_degree = parse_number(degrees.substr(kDegreesUpTo.size()));
    if (!scope.max_degree) return std::nullopt;
  } else if (degrees != kAll) {
    return std::nullopt;
  }
  if (!variadic.empty()) {
    constexpr std::string_view from = "1 to ", suffix = " variadic inputs";
    if (variadic.rfind(from, 0) != 0 || variadic.size() <= from.size() + suffix.size() ||
        variadic.substr(variadic.size() - suffix.size()) != suffix)
      return std::nullopt;
    const auto n =
        parse_number(variadic.substr(from.size(), variadic.size() - from.size() - suffix.size()));
    if (!n) return std::nullopt;
    scope.max_variadic = static_cast<int>(*n);
  }
  return scope;
}

std::string to_string(const ProvedScope& scope) {
  std::string text =
      scope.max_degree ? fmt::format("{}{}", kDegreesUpTo, *scope.max_degree) : std::string(kAll);
  if (scope.max_variadic) text += fmt::format("; 1 to {} variadic inputs", *scope.max_variadic);
  return text;
}

nlohmann::json to_json(const ProvedScope& scope) {
  nlohmann::json j;
  j["degrees"] = scope.max_degree ? nlohmann::json(*scope.max_degree) : nlohmann::json("all");
  j["variadic_inputs"] =
      scope.max_variadic ? nlohmann::json(*scope.max_variadic) : nlohmann::json("all");
  return j;
}

bool within_proved_scope(const Match& match, const std::map<std::string, std::int64_t>& params) {
  const Rule& rule = *match.rule;
  const ProvedScope& scope = rule.proved;
  if (!scope.bounded()) return true;
  if (!rule.variadic_input().empty() && !scope.covers_variadic(match.variadic.size())) return false;
  if (!scope.max_degree) return true;
  // The degrees a proof quantifies over: the degree parameters and the symbols bound to a parallel
  // operator's degree.
  for (const auto& p : rule.parameter_domains)
    if (p.domain == RuleParameter::Domain::Degree)
      if (const auto it = params.find(p.name);
          it != params.end() && !scope.covers_degree(it->second))
        return false;
  for (const auto& node : rule.source.nodes) {
    const auto attr = node.attrs.find("degree");
    if (attr == node.attrs.end() || attr->second.kind != RuleAttr::Kind::Symbol) continue;
    const auto value = match.symbols.find(attr->second.name);
    if (value == match.symbols.end()) continue;
    if (const auto* d = std::get_if<std::int64_t>(&value->second); d && !scope.covers_degree(*d))
      return false;
  }
  return true;
}

}  // namespace unity
