#include "pipeline_tied_tables.h"

#include <algorithm>
#include <map>

#include "unity/core/pcg/tied_weights.h"

namespace unity::pipeline_layouts {

PipelineTiedTables::PipelineTiedTables(const Graph& model, const SegmentChain& chain)
    : segments_(static_cast<int>(chain.segments.size())) {
  std::map<NodeId, int> segment_of;
  for (int j = 0; j < segments_; ++j)
    for (NodeId id : chain.segments[j].nodes)
      for (const auto& in : model.node(id).inputs) segment_of.emplace(in.node, j);
  for (NodeId w : tied_copies(model)) {
    const auto partner = tied_partner(model, w);
    const auto a = segment_of.find(w), b = segment_of.find(*partner);
    if (a == segment_of.end() || b == segment_of.end()) continue;
    pairs_.push_back(
        {a->second, b->second, static_cast<double>(model.node(w).outputs.at(0).num_elements())});
    elements_ += pairs_.back().elements;
  }
}

double PipelineTiedTables::tie(const std::vector<std::pair<int, int>>& parts, int pp, int tp,
                               double gradient_bytes, std::vector<double>& rank_params,
                               const std::function<double(int, int, double)>& allreduce) const {
  if (pairs_.empty()) return 0;
  std::vector<int> rank_of(static_cast<std::size_t>(segments_), 0);
  for (int c = 0; c < static_cast<int>(parts.size()); ++c)
    for (int j = parts[c].first; j <= parts[c].second; ++j) rank_of[j] = c % pp;
  double exposed = 0;
  for (const Pair& t : pairs_) {
    const int a = rank_of[t.segment], b = rank_of[t.partner_segment];
    const double per_device = t.elements / tp;
    if (a == b) {
      rank_params[a] -= per_device;
      continue;
    }
    exposed = std::max(exposed, allreduce(a, b, per_device * gradient_bytes));
  }
  return exposed;
}

}  // namespace unity::pipeline_layouts
