#include <algorithm>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "attribute_defaults.h"
#include "unity/core/substitution.h"

namespace unity {
namespace {

std::pair<std::string, int> split_ref(const std::string& ref) {
  const auto colon = ref.find(':');
  if (colon == std::string::npos) return {ref, 0};
  return {ref.substr(0, colon), std::stoi(ref.substr(colon + 1))};
}

std::optional<AttrValue> literal_attr(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) return j.get<std::vector<std::int64_t>>();
  return std::nullopt;
}

}  // namespace

std::optional<Graph> apply_substitution(const Graph& graph, const Match& match,
                                        const std::map<std::string, std::int64_t>& params) {
  const Rule& rule = *match.rule;
  Graph g = graph;
  std::map<std::string, NodeId> created;
  const std::string anchor = graph.node(match.nodes.begin()->second).op.name;
  auto resolve = [&](const std::string& ref) -> TensorRef {
    const auto [name, index] = split_ref(ref);
    if (auto it = created.find(name); it != created.end()) return {it->second, index};
    return match.inputs.at(name);
  };
  try {
    for (const auto& t : rule.target.nodes) {
      Operator op;
      op.type = t.op;
      if (!t.copy_of.empty()) {
        const Node& src = graph.node(match.nodes.at(t.copy_of));
        op.attrs = src.op.attrs;
        op.name = src.op.name;
      } else {
        op.name = fmt::format("{}.{}", anchor, t.name);
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
      detail::drop_default_attributes(op);
      std::vector<TensorRef> inputs;
      for (const auto& in : t.inputs) inputs.push_back(resolve(in));
      created[t.name] = g.add(std::move(op), std::move(inputs));
    }
  } catch (const ShapeError&) {
    return std::nullopt;  // the target is not valid here (e.g. a degree that does not divide)
  }
  for (std::size_t i = 0; i < rule.source.outputs.size(); ++i) {
    const auto [src_name, src_index] = split_ref(rule.source.outputs[i]);
    const TensorRef from{match.nodes.at(src_name), src_index};
    const TensorRef to = resolve(rule.target.outputs[i]);
    if (g.shape(from) != g.shape(to)) return std::nullopt;
    g.replace_uses(from, to);
  }
  // Remove the replaced nodes, consumers first.
  auto order = graph.topological_order();
  std::reverse(order.begin(), order.end());
  const auto matched = match.matched_nodes();
  for (NodeId id : order)
    if (std::binary_search(matched.begin(), matched.end(), id)) g.remove(id);
  return g;
}

}  // namespace unity
