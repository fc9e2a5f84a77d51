// A readable account of what one rank does: `unity-worker --explain` and test failure messages.
#include <set>

#include <fmt/format.h>

#include "unity/executor/program.h"

namespace unity::executor {

std::string describe_rank(const Program& p, int rank) {
  std::string s = fmt::format("rank {} of {}\n", rank, p.ranks);
  for (const auto& step : p.steps) {
    const Node& n = p.graph.node(step.node);
    std::vector<int> mine;
    std::set<int> peers_in, peers_out;
    for (const auto& t : step.tasks) {
      if (t.rank == rank) mine.push_back(t.index);
      for (const auto& frags : t.fragments)
        for (const auto& f : frags) {
          if (t.rank == rank && f.rank != rank) peers_in.insert(f.rank);
          if (t.rank != rank && f.rank == rank) peers_out.insert(t.rank);
        }
    }
    if (step.fused_away) {
      s += fmt::format("  {}: done by the reduce-scatter before it\n", p.graph.describe(n.id));
      continue;
    }
    std::string line =
        fmt::format("  {}: tasks [{}]", p.graph.describe(n.id), fmt::join(mine, ","));
    switch (step.collective) {
      case Collective::AllReduce:
        line += " all-reduce";
        break;
      case Collective::ReduceScatter:
        line += " reduce-scatter";
        break;
      default:
        if (!peers_in.empty()) line += fmt::format(" receives from [{}]", fmt::join(peers_in, ","));
        if (!peers_out.empty()) line += fmt::format(" sends to [{}]", fmt::join(peers_out, ","));
    }
    for (const auto& g : step.groups)
      if (std::find(g.begin(), g.end(), rank) != g.end())
        line += fmt::format(" with ranks [{}]", fmt::join(g, ","));
    if (!step.statistics_groups.empty())
      line += " (batch statistics shared across sample partitions)";
    s += line + "\n";
  }
  for (const auto& sync : p.gradient_syncs) {
    if (std::find(sync.ranks.begin(), sync.ranks.end(), rank) == sync.ranks.end()) continue;
    std::int64_t elements = 0;
    for (const auto& c : sync.cells) elements += c.num_elements();
    s += fmt::format("  gradient all-reduce of '{}' ({} values) with ranks [{}]\n",
                     p.graph.node(sync.root).op.name, elements, fmt::join(sync.ranks, ","));
  }
  return s;
}

}  // namespace unity::executor
