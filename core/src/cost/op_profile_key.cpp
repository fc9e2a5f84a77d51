#include "unity/core/cost/op_profile_key.h"

#include <map>
#include <variant>

#include <fmt/format.h>

namespace unity {
namespace {

std::string attr_text(const AttrValue& value) {
  struct Visitor {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }  // shortest exact form
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
  };
  return std::visit(Visitor{}, value);
}

std::string piece_text(const ParallelTensorShape& s) {
  std::vector<std::int64_t> piece;
  piece.reserve(s.dims.size());
  for (const auto& d : s.dims) piece.push_back(d.degree > 0 ? d.size / d.degree : d.size);
  return fmt::format("{}[{}]", to_string(s.dtype), fmt::join(piece, ","));
}

bool needs_gradient(const Graph& g, NodeId id, std::map<NodeId, bool>& memo) {
  if (auto it = memo.find(id); it != memo.end()) return it->second;
  const Node& n = g.node(id);
  bool result = false;
  if (n.op.type == OpType::Weight) {
    result = is_floating(n.outputs.at(0).dtype);
  } else if (!n.outputs.empty() && is_floating(n.outputs.at(0).dtype)) {
    // A weight among the direct inputs settles it without walking the producers back to the
    // model's inputs: the cost model builds a key on every lookup of a measured op type.
    for (const auto& in : n.inputs) {
      const Node& p = g.node(in.node);
      if (p.op.type == OpType::Weight && is_floating(p.outputs.at(0).dtype)) {
        result = true;
        break;
      }
    }
    for (const auto& in : n.inputs) result = result || needs_gradient(g, in.node, memo);
  }
  memo[id] = result;
  return result;
}

}  // namespace

bool needs_gradient(const Graph& graph, TensorRef tensor) {
  std::map<NodeId, bool> memo;
  return needs_gradient(graph, tensor.node, memo);
}

std::string op_profile_key(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  std::string key(to_string(n.op.type));
  key += '(';
  bool first = true;
  for (const auto& [name, value] : n.op.attrs.items()) {  // a std::map: sorted, so stable
    if (!first) key += ',';
    first = false;
    key += name + '=' + attr_text(value);
  }
  key += ')';
  std::map<NodeId, bool> memo;
  for (const auto& in : n.inputs) {
    key += ' ' + piece_text(graph.shape(in));
    if (needs_gradient(graph, in.node, memo)) key += "+grad";
  }
  key += " ->";
  for (const auto& out : n.outputs) key += ' ' + piece_text(out);
  return key;
}

}  // namespace unity
