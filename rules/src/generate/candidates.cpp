#include "candidates.h"

#include <algorithm>
#include <map>
#include <set>

namespace unity::rules::gen {
namespace {

struct Info {
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint64_t> fingerprints;  // of every tensor
};

Info info(const Enumeration& e, const GenGraph& g) {
  Info i;
  i.hashes = tensor_hashes(e, g);
  for (const auto& v : tensor_values(e, g)) i.fingerprints.push_back(fingerprint(v));
  return i;
}

// The op producing tensor t, or nullptr for an input.
const GenOp* producer(const Enumeration& e, const GenGraph& g, int t, int& output) {
  int first = static_cast<int>(e.family->inputs.size());
  for (const auto& o : g.ops) {
    const int n = e.template_outputs[o.tmpl];
    if (t < first + n) {
      output = t - first;
      return &o;
    }
    first += n;
  }
  return nullptr;
}

bool common_subgraph(const Enumeration& e, const GenGraph& a, const Info& ia, const GenGraph& b,
                     const Info& ib) {
  const std::size_t inputs = e.family->inputs.size();
  std::set<std::uint64_t> mine(ia.hashes.begin() + static_cast<std::ptrdiff_t>(inputs),
                               ia.hashes.end());
  for (std::size_t t = inputs; t < ib.hashes.size(); ++t)
    if (mine.count(ib.hashes[t])) return true;
  // The same outer operator on equivalent inputs.
  int oa = 0, ob = 0;
  const GenOp* pa = producer(e, a, a.output, oa);
  const GenOp* pb = producer(e, b, b.output, ob);
  if (pa && pb && pa->tmpl == pb->tmpl && oa == ob && pa->arity == pb->arity) {
    bool same = true;
    for (int i = 0; i < pa->arity; ++i)
      same = same && ia.fingerprints[pa->in[i]] == ib.fingerprints[pb->in[i]];
    if (same) return true;
  }
  return false;
}

// A graph that gathers (Combine, Reduce, AllReduce, Batch) only at its output: one parallel stage,
// as the search's one-step parallelisations are.
bool single_stage(const Enumeration& e, const GenGraph& g) {
  int gathers = 0;
  for (const auto& o : g.ops) {
    const OpType t = e.templates[o.tmpl].type;
    gathers +=
        t == OpType::Combine || t == OpType::Reduce || t == OpType::AllReduce || t == OpType::Batch;
  }
  if (gathers == 0) return true;
  int index = 0;
  const GenOp* last = producer(e, g, g.output, index);
  if (gathers > 1 || !last) return false;
  const OpType t = e.templates[last->tmpl].type;
  return t == OpType::Combine || t == OpType::Reduce || t == OpType::AllReduce ||
         t == OpType::Batch;
}

}  // namespace

std::vector<Candidate> candidates(const Enumeration& e, CandidateStats& stats) {
  std::vector<int> order(e.graphs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    const auto& a = e.graphs[static_cast<std::size_t>(x)];
    const auto& b = e.graphs[static_cast<std::size_t>(y)];
    if (a.fingerprint != b.fingerprint) return a.fingerprint < b.fingerprint;
    if (a.ops.size() != b.ops.size()) return a.ops.size() < b.ops.size();
    return x < y;
  });
  std::vector<Candidate> out;
  std::map<int, Info> infos;
  auto get = [&](int g) -> const Info& {
    auto it = infos.find(g);
    if (it == infos.end())
      it = infos.emplace(g, info(e, e.graphs[static_cast<std::size_t>(g)])).first;
    return it->second;
  };
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin;
    while (end < order.size() && e.graphs[static_cast<std::size_t>(order[end])].fingerprint ==
                                     e.graphs[static_cast<std::size_t>(order[begin])].fingerprint)
      ++end;
    if (end - begin >= 2) {
      ++stats.classes;
      const std::size_t smallest = e.graphs[static_cast<std::size_t>(order[begin])].ops.size();
      std::vector<int> minimal, rest;
      for (std::size_t i = begin; i < end; ++i)
        (e.graphs[static_cast<std::size_t>(order[i])].ops.size() == smallest ? minimal : rest)
            .push_back(order[i]);
      if (minimal.size() > 2) minimal.resize(2);  // a few representatives are enough
      auto propose = [&](int s, int t) {
        const auto& gs = e.graphs[static_cast<std::size_t>(s)];
        const auto& gt = e.graphs[static_cast<std::size_t>(t)];
        if (gs.ops.empty()) return;
        if ((gt.inputs_used & ~gs.inputs_used) != 0) return;
        // With parallel operators about, a target that computes more than its source is a detour.
        if (gt.compute_ops > gs.compute_ops &&
            gt.ops.size() > static_cast<std::size_t>(gt.compute_ops))
          return;
        ++stats.proposed;
        if (common_subgraph(e, gs, get(s), gt, get(t))) {
          ++stats.pruned_common;
          return;
        }
        out.push_back({s, t});
      };
      for (int m : minimal)
        for (int g : rest) {
          propose(g, m);
          propose(m, g);
        }
      for (int a : minimal)
        for (int b : minimal)
          if (a != b) propose(a, b);
      // A serial graph larger than the smallest (an unfused MLP block when the fused one is
      // smallest) is paired with the parallel graphs too: parallelising it in one step is a rule
      // the search needs, where the pair with the smallest graph would only parallelise the fused
      // form.
      for (int s : rest) {
        const auto& gs = e.graphs[static_cast<std::size_t>(s)];
        if (gs.ops.size() != static_cast<std::size_t>(gs.compute_ops)) continue;
        for (int g : rest) {
          const auto& gg = e.graphs[static_cast<std::size_t>(g)];
          if (gg.ops.size() > static_cast<std::size_t>(gg.compute_ops) &&
              gg.compute_ops == gs.compute_ops && single_stage(e, gg))
            propose(s, g);
        }
      }
    }
    begin = end;
    infos.clear();
  }
  return out;
}

}  // namespace unity::rules::gen
