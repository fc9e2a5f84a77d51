#pragma once
// Finding where a rule's source pattern occurs in a PCG and replacing it by the rule's target.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/pcg/attributes.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/rules/rule.h"

namespace unity {

struct Match {
  const Rule* rule = nullptr;
  std::map<std::string, NodeId> nodes;      // source node name -> graph node
  std::map<std::string, TensorRef> inputs;  // rule input -> graph tensor
  std::vector<TensorRef> variadic;          // the tensors the variadic input ("xs*") stands for
  std::map<std::string, AttrValue> symbols;
  std::vector<NodeId> matched_nodes() const;
};

// Every occurrence of the rule's source pattern whose inner nodes are read by nothing outside it.
std::vector<Match> find_matches(const Graph& graph, const Rule& rule);

// Every assignment of the rule's parameters at this match: degree parameters from `degrees`, dim
// parameters from the axes of the tensor they name.
std::vector<std::map<std::string, std::int64_t>> parameter_choices(
    const Graph& graph, const Match& match, const std::vector<std::int64_t>& degrees);

// Whether the rule's constraints hold at this match with these parameters (an operand that cannot
// be evaluated, e.g. an axis out of range, fails the constraint).
bool constraints_hold(const Graph& graph, const Match& match,
                      const std::map<std::string, std::int64_t>& params);

// Whether a rewrite must keep what each tensor's replicas mean (replica_meaning.h): what the
// search and the planners apply must; the rule verifier applies rules unchecked, to judge them.
enum class ReplicaMeaning { Kept, Unchecked };

// The graph with the match replaced by the target, parameters bound to `params`. Nothing when the
// target's shapes do not infer, or its outputs' parallel shapes differ from the replaced outputs'
// (a substitution never changes what the rest of the graph sees), or a constraint fails, or (with
// ReplicaMeaning::Kept) the target reads partial sums where it may not or hands on replicas that
// mean something else than the source's (shape inference counts replicas, not what they hold: two
// rules each sound alone can end in a bias added once per partial sum).
std::optional<Graph> apply_substitution(const Graph& graph, const Match& match,
                                        const std::map<std::string, std::int64_t>& params,
                                        ReplicaMeaning meaning = ReplicaMeaning::Kept);

// The same rewrite made in `graph` itself (false, and `graph` unchanged, where apply_substitution
// gives nothing), for a caller that rewrites one graph many times.
bool apply_substitution_in_place(Graph& graph, const Match& match,
                                 const std::map<std::string, std::int64_t>& params,
                                 ReplicaMeaning meaning = ReplicaMeaning::Kept);

}  // namespace unity
