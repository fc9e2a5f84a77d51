#include <algorithm>

#include <fmt/format.h>

#include "attribute_defaults.h"
#include "unity/core/errors.h"
#include "unity/core/rules/substitution.h"
#include "unity/core/shapes/replica_meaning.h"

namespace unity {
namespace {

std::optional<AttrValue> literal_attr(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) return j.get<std::vector<std::int64_t>>();
  return std::nullopt;
}

// Whether the target's new nodes mean what the source's did: each reads copies or partial sums
// as its operator may (replica_meaning.h), and each output handed over has the same copies and
// partial sums as the source's. Degrees alone do not say it: a rule verified on serial tensors
// (a Linear's bias made an Add) applied to a reduction-parallel Linear, which adds its bias once,
// would add it once per partial sum.
bool keeps_replica_meaning(const Graph& g, const std::vector<NodeId>& added,
                           const std::vector<std::pair<TensorRef, TensorRef>>& handovers) {
  std::map<TensorRef, ReplicaLayout> known;
  try {
    for (NodeId id : added) {
      const Node& n = g.node(id);
      std::vector<ReplicaLayout> in;
      for (const auto& input : n.inputs) in.push_back(replica_layout_of(g, input, known));
      const auto out = replica_output_layouts(g, n, in);
      for (int k = 0; k < static_cast<int>(out.size()); ++k) known[{id, k}] = out[k];
    }
  } catch (const ReplicaMeaningError&) {
    return false;
  }
  for (const auto& [from, to] : handovers) {
    if (g.shape(from).replica == 1) continue;
    try {
      if (replica_layout_of(g, from, known) != replica_layout_of(g, to, known)) return false;
    } catch (const ReplicaMeaningError&) {
      // The source was already without meaning; the target is not judged by it.
    }
  }
  return true;
}

// Adds the target's nodes, hands the source's outputs over to them and removes the source's nodes;
// false, with `g` as it was, when the target does not fit the match.
bool rewrite(Graph& g, const Match& match, const std::map<std::string, std::int64_t>& params,
             ReplicaMeaning meaning) {
  const Rule& rule = *match.rule;
  const NodeId first_new = g.next_id();
  std::vector<NodeId> added;  // in creation order, for undoing
  auto undo = [&] {
    for (auto it = added.rbegin(); it != added.rend(); ++it) g.remove(*it);
    g.release_ids_from(first_new);
    return false;
  };
  const Graph& graph = g;  // the matched nodes stay until the end
  std::map<std::string, NodeId> created;
  std::map<std::string, std::vector<NodeId>> repeated;  // foreach nodes: one id per variadic tensor
  // New nodes are named after the node the pattern is rooted at (its last node: usually the
  // operator being parallelised), so "fc1.px" reads as "fc1's partitioned input".
  const std::string anchor = graph.node(match.nodes.at(rule.source.nodes.back().name)).op.name;
  auto resolve = [&](const std::string& ref) -> TensorRef {
    const auto [name, index] = rule_ref(ref);
    if (auto it = created.find(name); it != created.end()) return {it->second, index};
    return match.inputs.at(name);
  };
  // A node's inputs, with "xs*" (the variadic tensors, or element `element` of them in a foreach
  // node) and "n*" (every copy of foreach node n) expanded.
  auto node_inputs = [&](const RuleNode& t, int element) {
    std::vector<TensorRef> out;
    for (const auto& in : t.inputs) {
      if (!is_variadic_ref(in)) {
        out.push_back(resolve(in));
      } else if (in == t.foreach) {
        out.push_back(match.variadic.at(static_cast<std::size_t>(element)));
      } else if (auto it = repeated.find(in.substr(0, in.size() - 1)); it != repeated.end()) {
        for (NodeId id : it->second) out.push_back({id, 0});
      } else {
        out.insert(out.end(), match.variadic.begin(), match.variadic.end());
      }
    }
    return out;
  };
  try {
    for (const auto& t : rule.target.nodes) {
      const int copies = t.foreach.empty() ? 1 : static_cast<int>(match.variadic.size());
      for (int element = 0; element < copies; ++element) {
        Operator op;
        op.type = t.op;
        if (!t.copy_of.empty()) {
          const Node& src = graph.node(match.nodes.at(t.copy_of));
          op.attrs = src.op.attrs;
          op.name = src.op.name;
        } else if (t.foreach.empty()) {
          op.name = fmt::format("{}.{}", anchor, t.name);
        } else {
          op.name = fmt::format("{}.{}{}", anchor, t.name, element);
        }
        for (const auto& [key, a] : t.attrs) {
          switch (a.kind) {
            case RuleAttr::Kind::Literal:
              if (auto v = literal_attr(a.literal)) op.attrs.set(key, *v);
              break;
            case RuleAttr::Kind::Symbol:
              op.attrs.set(key, match.symbols.at(a.name));
              break;
            case RuleAttr::Kind::Parameter:
              op.attrs.set(key, params.at(a.name));
              break;
          }
        }
        std::vector<TensorRef> inputs = node_inputs(t, element);
        detail::drop_default_attributes(op, inputs.empty() ? nullptr : &g.shape(inputs[0]));
        // Dims are stored non-negative (as the zoo and the importer do), so that patterns comparing
        // dims see one spelling.
        if ((is_parallel_op(op.type) || op.type == OpType::Concat || op.type == OpType::Softmax) &&
            !inputs.empty()) {
          const char* key = op.attrs.has("dim") ? "dim" : "axis";
          if (op.attrs.has(key)) {
            const std::int64_t v = op.attrs.get_int(key);
            const int rank = g.shape(inputs[0]).rank();
            if (v < 0) op.attrs.set(key, v + rank);
          }
        }
        const NodeId id = g.add(std::move(op), std::move(inputs));
        added.push_back(id);
        if (t.foreach.empty())
          created[t.name] = id;
        else
          repeated[t.name].push_back(id);
      }
    }
  } catch (const ShapeError&) {
    return undo();  // the target is not valid here (e.g. a degree that does not divide)
  }
  std::vector<std::pair<TensorRef, TensorRef>> handovers;
  for (std::size_t i = 0; i < rule.source.outputs.size(); ++i) {
    const auto [src_name, src_index] = rule_ref(rule.source.outputs[i]);
    const TensorRef from{match.nodes.at(src_name), src_index};
    const TensorRef to = resolve(rule.target.outputs[i]);
    if (g.shape(from) != g.shape(to)) return undo();
    handovers.emplace_back(from, to);
  }
  if (meaning == ReplicaMeaning::Kept && !keeps_replica_meaning(g, added, handovers))
    return undo();
  for (const auto& [from, to] : handovers) g.replace_uses(from, to);
  // Remove the replaced nodes, consumers first: a matched node goes once no other matched node
  // still reads it (the few matched nodes, not the whole graph, are ordered).
  std::vector<NodeId> left = match.matched_nodes();
  while (!left.empty()) {
    const auto last = std::find_if(left.begin(), left.end(), [&](NodeId id) {
      return std::none_of(left.begin(), left.end(), [&](NodeId other) {
        const auto& inputs = g.node(other).inputs;
        return std::any_of(inputs.begin(), inputs.end(),
                           [&](const TensorRef& t) { return t.node == id; });
      });
    });
    if (last == left.end()) throw GraphError("a rule's matched nodes read each other in a cycle");
    g.remove(*last);
    left.erase(last);
  }
  return true;
}

}  // namespace

std::optional<Graph> apply_substitution(const Graph& graph, const Match& match,
                                        const std::map<std::string, std::int64_t>& params,
                                        ReplicaMeaning meaning) {
  if (!constraints_hold(graph, match, params)) return std::nullopt;
  Graph g = graph;
  if (!rewrite(g, match, params, meaning)) return std::nullopt;
  return g;
}

bool apply_substitution_in_place(Graph& graph, const Match& match,
                                 const std::map<std::string, std::int64_t>& params,
                                 ReplicaMeaning meaning) {
  return constraints_hold(graph, match, params) && rewrite(graph, match, params, meaning);
}

}  // namespace unity
