#include "implication.h"

#include <functional>

#include "../verify/attribute_schema.h"
#include "unity/core/errors.h"
#include "unity/core/rules/substitution.h"

namespace unity::rules::gen {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

struct Built {
  Graph graph;
  std::map<NodeId, int> leaves;  // input prefix node -> family input
  NodeId sink = -1;
};

std::optional<Built> build(const Enumeration& e, const GenGraph& g) {
  Built b;
  std::vector<TensorRef> t;
  try {
    for (std::size_t i = 0; i < e.family->inputs.size(); ++i) {
      const auto& v = e.family->inputs[i].value;
      TensorRef r = b.graph.add_input(e.family->inputs[i].name, v.shape.sizes(), v.shape.dtype);
      for (int d = 0; d < v.shape.rank(); ++d)
        if (v.shape.dims[d].degree > 1)
          r = {b.graph.add(
                   {OpType::Partition,
                    {{"dim", std::int64_t{d}}, {"degree", std::int64_t{v.shape.dims[d].degree}}},
                    ""},
                   {r}),
               0};
      if (v.shape.replica > 1)
        r = {b.graph.add({OpType::Replicate, {{"degree", std::int64_t{v.shape.replica}}}, ""}, {r}),
             0};
      b.leaves[r.node] = static_cast<int>(i);
      t.push_back(r);
    }
    for (const auto& o : g.ops) {
      std::vector<TensorRef> in;
      for (int i = 0; i < o.arity; ++i) in.push_back(t[o.in[i]]);
      const NodeId id = b.graph.add(e.templates[o.tmpl], in);
      for (int out = 0; out < e.template_outputs[o.tmpl]; ++out) t.push_back({id, out});
    }
    b.sink = b.graph.add({OpType::Identity, {}, "sink"}, {t[static_cast<std::size_t>(g.output)]});
  } catch (const InputError&) {
    return std::nullopt;
  }
  return b;
}

// Structure of what the sink reads, with attributes at their defaults left out and input prefixes
// as leaves.
std::uint64_t cone(const Built& b, const Graph& g, TensorRef t,
                   std::map<TensorRef, std::uint64_t>& memo) {
  if (auto it = memo.find(t); it != memo.end()) return it->second;
  std::uint64_t h;
  if (auto leaf = b.leaves.find(t.node); leaf != b.leaves.end() && g.contains(t.node)) {
    h = mix(3, static_cast<std::uint64_t>(leaf->second));
  } else {
    const Node& n = g.node(t.node);
    h = mix(5, static_cast<std::uint64_t>(n.op.type));
    for (const auto& [key, value] : n.op.attrs.items()) {
      const int s = spec::slot_index(n.op.type, key);
      if (s >= 0) {
        const auto& slot = spec::attribute_slots(n.op.type)[static_cast<std::size_t>(s)];
        if (slot.default_value && *slot.default_value == value) continue;
      }
      h = mix(h, std::hash<std::string>{}(key + "=" + unity::to_string(value)));
    }
    for (const auto& in : n.inputs) h = mix(h, cone(b, g, in, memo));
    h = mix(h, static_cast<std::uint64_t>(t.index));
  }
  memo[t] = h;
  return h;
}

std::uint64_t sink_cone(const Built& b, const Graph& g) {
  std::map<TensorRef, std::uint64_t> memo;
  return cone(b, g, g.node(b.sink).inputs.at(0), memo);
}

}  // namespace

void ImplicationChecker::add(const Rule& rule) { rules_.push_back(rule); }

bool ImplicationChecker::implied(const Enumeration& e, const GenGraph& source,
                                 const GenGraph& target) const {
  const auto src = build(e, source);
  const auto tgt = build(e, target);
  if (!src || !tgt) return false;
  const std::uint64_t goal = sink_cone(*tgt, tgt->graph);
  std::vector<Graph> frontier = {src->graph};
  std::set<std::uint64_t> seen = {sink_cone(*src, src->graph)};
  for (int depth = 0; depth < 2 && !frontier.empty(); ++depth) {
    std::vector<Graph> next;
    for (const Graph& g : frontier) {
      std::set<OpType> present;
      for (const auto& [id, n] : g.nodes()) present.insert(n.op.type);
      for (const Rule& rule : rules_) {
        bool possible = true;
        for (const auto& n : rule.source.nodes) possible = possible && present.count(n.op);
        if (!possible) continue;
        for (const auto& m : find_matches(g, rule)) {
          for (const auto& params : parameter_choices(g, m, {2})) {
            auto rewritten = apply_substitution(g, m, params, ReplicaMeaning::Unchecked);
            if (!rewritten || !rewritten->contains(src->sink)) continue;
            const std::uint64_t h = sink_cone(*src, *rewritten);
            if (h == goal) return true;
            if (seen.insert(h).second && next.size() < 256) next.push_back(std::move(*rewritten));
          }
        }
      }
    }
    frontier = std::move(next);
  }
  return false;
}

}  // namespace unity::rules::gen
