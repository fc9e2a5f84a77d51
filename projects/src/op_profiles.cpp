#include "unity/projects/op_profiles.h"

#include <fmt/format.h>

#include "unity/projects/project.h"

namespace unity::projects {
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

}  // namespace

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
  for (const auto& in : n.inputs) key += ' ' + piece_text(graph.shape(in));
  key += " ->";
  for (const auto& out : n.outputs) key += ' ' + piece_text(out);
  return key;
}

ProjectProfileSource::ProjectProfileSource(const std::vector<OpProfile>& profiles) {
  for (const auto& p : profiles) {
    times_[{p.device, p.op_key}] = OpTimes{p.forward_s, p.backward_s};
    op_names_.insert(p.op_key.substr(0, p.op_key.find('(')));
  }
}

std::shared_ptr<const ProjectProfileSource> ProjectProfileSource::load(const Project& project) {
  return std::make_shared<const ProjectProfileSource>(project.op_profiles());
}

std::optional<OpTimes> ProjectProfileSource::lookup(const Graph& graph, NodeId node,
                                                    const DeviceSpec& device) const {
  if (times_.empty()) return std::nullopt;
  // The cost model asks for every task of every candidate: skip building the key for op types
  // nothing was measured for.
  if (!op_names_.contains(to_string(graph.node(node).op.type))) return std::nullopt;
  const auto it = times_.find(std::pair{device.name, op_profile_key(graph, node)});
  if (it == times_.end()) return std::nullopt;
  return it->second;
}

}  // namespace unity::projects
