#pragma once
// What the verifier proved a rule for. A symbolic proof covers every degree and, for a rule with a
// variadic input, every number of inputs; when Z3 cannot close it, the verifier proves each case up
// to a bound instead (degrees 1..8, 1..8 variadic inputs). The matcher never applies a rule outside
// its proved scope: a rule proved up to degree 8 is not a proof at degree 12.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace unity {

struct Match;

struct ProvedScope {
  std::optional<std::int64_t> max_degree;  // every degree of the rule up to this; none: all
  std::optional<int> max_variadic;         // variadic inputs bound, 1 to this; none: any number

  bool bounded() const { return max_degree || max_variadic; }
  bool covers_degree(std::int64_t degree) const { return !max_degree || degree <= *max_degree; }
  bool covers_variadic(std::size_t inputs) const {
    return !max_variadic || inputs <= static_cast<std::size_t>(*max_variadic);
  }
  // Whether `inner` claims no more than this scope proves.
  bool includes(const ProvedScope& inner) const;
  bool operator==(const ProvedScope&) const = default;
};

// The text of a rule's "verified" field and of the verifier's detail: "all degrees and shapes",
// "degrees up to 8", each optionally followed by "; 1 to 8 variadic inputs". Empty text is the
// unbounded scope. Nothing when the text states no scope.
std::optional<ProvedScope> parse_proved_scope(std::string_view text);
std::string to_string(const ProvedScope& scope);
// {"degrees": "all" | 8, "variadic_inputs": "all" | 3}: `unity rules verify --json`'s "proved".
nlohmann::json to_json(const ProvedScope& scope);

// Whether a match, with these parameters, lies inside its rule's proved scope: its variadic input
// binds few enough tensors, and every degree parameter and every degree the source pattern binds to
// a symbol is within the degree bound (parameters not given yet are not checked).
bool within_proved_scope(const Match& match,
                         const std::map<std::string, std::int64_t>& params = {});

}  // namespace unity
