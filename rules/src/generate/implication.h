#pragma once
// "No rule implied by a smaller one": a candidate is dropped when the rules already accepted (all
// smaller) rewrite its source into its target in at most two steps, applied with the core's matcher
// and substitution to the candidate's source graph, as the search would.
#include <deque>
#include <map>
#include <set>

#include "enumerator.h"
#include "unity/core/rules/rule.h"

namespace unity::rules::gen {

class ImplicationChecker {
 public:
  void add(const Rule& rule);
  bool implied(const Enumeration& e, const GenGraph& source, const GenGraph& target) const;

 private:
  std::deque<Rule> rules_;
};

}  // namespace unity::rules::gen
