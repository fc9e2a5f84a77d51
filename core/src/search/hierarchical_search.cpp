#include "unity/core/search/hierarchical_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "search/pieces.h"
#include "unity/core/errors.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/search/candidate_cost.h"
#include "unity/core/search/graph_splitting.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/strategies/data_parallel.h"

namespace unity {
namespace {

using detail::PieceGraph;

// The best graph of one piece for one partitioning of the tensor it hands on.
struct Choice {
  bool valid = false;
  double key = kInfinity;  // seconds (piece + conversion) when it fits, else 1e9 + overflow
  PieceGraph piece;
  std::vector<AppliedSubstitution> applied;
};

struct Table {
  std::vector<Choice>
      by_leaving;  // one per partitioning of the cut tensor (one for the last piece)
};

// Forwards the events of the many substitution searches as one search: counts run on across them,
// and only the first Started and the last Finished reach the observer.
class EventForwarder : public SearchObserver {
 public:
  explicit EventForwarder(SearchObserver* out) : out_(out) {}
  void on_event(const SearchEvent& e) override {
    if (!out_ || e.kind == SearchEvent::Kind::Started || e.kind == SearchEvent::Kind::Finished)
      return;
    SearchEvent f = e;
    f.step += steps_;
    f.candidates_evaluated += candidates_;
    out_->on_event(f);
  }
  void search_done(std::int64_t steps, std::int64_t candidates) {
    steps_ += steps;
    candidates_ += candidates;
  }
  void emit(SearchEvent e) {
    if (!out_) return;
    e.step = steps_;
    e.candidates_evaluated = candidates_;
    out_->on_event(e);
  }

 private:
  SearchObserver* out_;
  std::int64_t steps_ = 0, candidates_ = 0;
};

// Counts a search's steps from its own events, for the forwarder.
class StepCounter : public SearchObserver {
 public:
  explicit StepCounter(SearchObserver* next) : next_(next) {}
  void on_event(const SearchEvent& e) override {
    steps = std::max(steps, e.step);
    if (next_) next_->on_event(e);
  }
  std::int64_t steps = 0;

 private:
  SearchObserver* next_;
};

class Hierarchy {
 public:
  Hierarchy(const Graph& g, const RuleSet& rules, const CostModel& model,
            const HierarchicalOptions& options)
      : g_(g),
        rules_(rules),
        model_(model),
        options_(options),
        events_(options.search.observer),
        conversions_(model) {
    budget_ =
        options.memory_budget > 0 ? options.memory_budget : smallest_device_memory(model.machine());
  }

  HierarchicalResult run() {
    const auto t0 = std::chrono::steady_clock::now();
    SearchEvent started = options_.search.scope;
    started.kind = SearchEvent::Kind::Started;
    // The model as given, on one device (pricing a serial graph on a large machine means searching
    // every placement of every operator, for a number nobody needs that precisely).
    const CostModel one(select_machine(model_.machine(), {0, 1}), model_.optimizer());
    const CandidateCost initial = estimate_candidate(g_, one, nullptr, kInfinity);
    started.best_ms = started.candidate_ms = initial.time * 1e3;
    started.best_fits = initial.fits;
    events_.emit(started);

    SplitPlan plan;
    if (options_.split) plan = choose_cuts(g_, rules_, options_.min_piece, options_.search.kind);
    if (plan.cuts.empty())
      whole();
    else
      pieces(plan);

    result_.cache_entries = cache() ? cache()->size() : 0;
    SearchEvent finished = options_.search.scope;
    finished.kind = SearchEvent::Kind::Finished;
    finished.status = result_.status;
    finished.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const CandidateCost final_cost = price(result_.best, budget_);
    finished.best_ms = finished.candidate_ms = final_cost.time * 1e3;
    finished.best_fits = final_cost.fits;
    events_.emit(finished);
    return std::move(result_);
  }

 private:
  MappingCache* cache() {
    if (!options_.cache) return nullptr;
    return options_.shared_cache ? options_.shared_cache : &cache_;
  }

  // A candidate's estimated cost; a candidate where a pinned rule still applies is ranked with the
  // plans that do not fit, so it is searched through but never returned while another exists.
  CandidateCost price(const Graph& g, double budget) {
    CandidateCost c = estimate_candidate(g, model_, cache(), budget);
    for (const auto& pin : options_.pins) {
      const Rule* rule = rules_.find(pin.rule);
      if (rule && matches_at(g, *rule, pin, options_.search.degrees, options_.pinned_below)) {
        c.fits = false;
        c.overflow = std::max(c.overflow, 1.0) + 1.0;
      }
    }
    return c;
  }

  SearchOptions search_options(const SearchEvent& scope, std::set<NodeId> frozen,
                               StepCounter& counter) {
    SearchOptions so = options_.search;
    so.observer = &counter;
    so.scope = scope;
    so.frozen.insert(frozen.begin(), frozen.end());
    if (!so.rank) so.rank = [this](const Graph& g) { return packed_estimate(g, model_); };
    return so;
  }

  void note(const SearchResult& r, const StepCounter& counter) {
    events_.search_done(counter.steps, r.candidates_evaluated);
    result_.candidates_evaluated += r.candidates_evaluated;
    ++result_.searches;
    if (r.status == "cancelled" || result_.status == "cancelled")
      result_.status = "cancelled";
    else if (r.status == "time limit" || result_.status == "time limit")
      result_.status = "time limit";
    else if (r.status == "budget")
      result_.status = "budget";
    else if (result_.status.empty())
      result_.status = "completed";
  }

  std::vector<Graph> whole_graph_seeds() const {
    std::vector<Graph> seeds;
    for (auto d : options_.seed_degrees) {
      try {
        seeds.push_back(make_data_parallel(g_, static_cast<int>(d)));
      } catch (const InputError&) {
      }
    }
    return seeds;
  }

  void whole() {
    StepCounter counter(&events_);
    SearchOptions so = search_options(options_.search.scope, {}, counter);
    auto cost = [&](const Graph& g) { return price(g, budget_); };
    std::vector<Graph> starts{g_};
    for (auto& s : whole_graph_seeds()) starts.push_back(std::move(s));
    for (const auto& s : options_.whole_graph_starts) starts.push_back(s);
    std::vector<double> keys;
    double best_start = kInfinity;
    price_starts(starts, budget_, keys, best_start);
    double best = kInfinity;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      if (keys[i] > options_.lineage_slack * best_start) continue;
      const Graph& from = starts[i];
      StepCounter lineage(&events_);
      so.observer = &lineage;
      const SearchResult r = substitution_search(from, {}, rules_, cost, so);
      note(r, lineage);
      if (r.cost.key() < best) {
        best = r.cost.key();
        result_.best = r.best;
        result_.applied = r.applied;
      }
    }
    result_.pieces = 1;
  }

  // --- graph splitting -------------------------------------------------------------------------

  // The starting points of a piece entered in `entering`: the first piece tries the serial graph
  // and every data-parallel degree; a later piece continues the parallelism it is handed (the
  // tensor entering split d ways along the samples: data-parallel d ways; serial otherwise), where
  // tensor parallelism may then take the remaining devices. Other combinations arrive through the
  // other entering layouts. Each start is priced once.
  struct Starts {
    PieceGraph serial;          // the piece as the model has it
    std::vector<Graph> graphs;  // the starting points
    std::vector<double> keys;   // their priced keys
    double best = kInfinity;
  };

  Starts make_starts(int k, const ParallelTensorShape* entering, double prune_above = kInfinity) {
    const SegmentTemplate& t = templates_[k];
    Starts s;
    s.serial = detail::instantiate(t, t.body, entering);
    std::vector<std::int64_t> degrees;
    if (!entering)
      degrees = options_.seed_degrees;
    else if (entering->rank() > 0 && entering->dims[0].degree > 1)
      degrees.push_back(entering->dims[0].degree);
    for (auto d : degrees)
      if (auto body = detail::data_parallel_body(t, static_cast<int>(d))) {
        try {
          s.graphs.push_back(detail::instantiate(t, *body, entering).graph);
        } catch (const InputError&) {
        }
      }
    if (!entering || s.graphs.empty()) s.graphs.insert(s.graphs.begin(), s.serial.graph);
    price_starts(s.graphs, piece_budget_[k], s.keys, s.best, prune_above);
    return s;
  }

  // Prices starting points, most promising first by a cheap lower bound; one whose bound is past
  // `lineage_slack` x the best price so far is not priced (its key stays infinite).
  // With `prune_above` finite, a start whose bound is past it is not priced either, and `best`
  // becomes the smallest bound when nothing was priced (a lower bound is all a ranking needs).
  void price_starts(const std::vector<Graph>& graphs, double budget, std::vector<double>& keys,
                    double& best, double prune_above = kInfinity) {
    std::vector<std::pair<double, std::size_t>> bounds;
    for (std::size_t i = 0; i < graphs.size(); ++i)
      bounds.emplace_back(critical_path_bound(graphs[i], model_), i);
    std::sort(bounds.begin(), bounds.end());
    keys.assign(graphs.size(), kInfinity);
    best = kInfinity;
    double best_time = kInfinity;  // bounds are times: compare them with times, fitting or not
    for (const auto& [bound, i] : bounds) {
      if (bound > options_.lineage_slack * best_time || bound > prune_above) continue;
      const CandidateCost c = price(graphs[i], budget);
      keys[i] = c.key();
      best = std::min(best, keys[i]);
      best_time = std::min(best_time, c.time);
    }
    if (!std::isfinite(best) && !bounds.empty()) best = bounds.front().first;
  }

  // What entering in layout `in` costs piece k at least at first: its best start (for ranking the
  // layouts worth a search), shared between equal pieces.
  // Layouts whose start cannot come within `prune_above` are only bounded, not priced.
  double entry_estimate(int k, int in, double prune_above) {
    const std::string key = reuse_key(k, in);
    if (auto it = estimates_.find(key); it != estimates_.end()) return it->second;
    const double e = make_starts(k, k > 0 ? &layouts_[k - 1][in] : nullptr, prune_above).best;
    estimates_.emplace(key, e);
    return e;
  }

  std::string reuse_key(int k, int in) const {
    // The first piece reads the model's inputs where the others read a boundary input of the same
    // shape: equal hashes, different pieces.
    const SegmentTemplate& t = templates_[k];
    return fmt::format("{:x}|{}|{}|{}", t.body.structural_hash(), in, t.boundary_input >= 0,
                       t.output_marker >= 0);
  }

  Table search_piece(int k, const ParallelTensorShape* entering) {
    Starts starting = make_starts(k, entering);
    const PieceGraph& start = starting.serial;
    const std::vector<ParallelTensorShape>* outs =
        k + 1 < static_cast<int>(templates_.size()) ? &layouts_[k] : nullptr;
    Table table;
    table.by_leaving.resize(outs ? outs->size() : 1);

    std::set<NodeId> frozen = start.entry;
    if (start.marker >= 0) frozen.insert(start.marker);
    SearchEvent scope = options_.search.scope;
    scope.segment = k;
    scope.segments = static_cast<int>(templates_.size());
    scope.boundary = entering ? layout_label(*entering) : "";
    StepCounter counter(&events_);
    SearchOptions so = search_options(scope, frozen, counter);

    // The cost function prices the piece plus the cheapest hand-over; on_costed, called right after
    // with the same candidate, files it under every hand-over partitioning it is the best for.
    CandidateCost raw;
    std::vector<double> conversion;
    auto cost = [&](const Graph& g) {
      raw = price(g, piece_budget_[k]);
      CandidateCost c = raw;
      conversion.clear();
      if (outs) {
        const ParallelTensorShape& q = g.shape(g.node(start.marker).inputs.at(0));
        double cheapest = kInfinity;
        for (const auto& layout : *outs) {
          conversion.push_back(conversions_.seconds(q, layout));
          cheapest = std::min(cheapest, conversion.back());
        }
        c.time += cheapest;
      }
      return c;
    };
    so.on_costed = [&](const Graph& g, const CandidateCost&,
                       const std::vector<AppliedSubstitution>& applied) {
      for (std::size_t j = 0; j < table.by_leaving.size(); ++j) {
        const double extra = outs ? conversion[j] : 0;
        if (!std::isfinite(extra) || !std::isfinite(raw.time)) continue;
        const double key = raw.fits ? raw.time + extra : 1e9 + raw.overflow;
        Choice& c = table.by_leaving[j];
        if (key >= c.key) continue;
        c.valid = true;
        c.key = key;
        c.piece = start;
        c.piece.graph = g;
        c.applied = applied;
      }
    };
    // Every starting point is searched on its own (its own best decides what it prunes): a
    // data-parallel start is far ahead of the serial one at first, and would otherwise cut off the
    // serial start's path to tensor parallelism before it is walked.
    // Starts far behind the best one are not searched: their lineage would have to gain more than
    // a factor of `lineage_slack` back.
    std::vector<const Graph*> starts;
    for (std::size_t i = 0; i < starting.graphs.size(); ++i)
      if (starting.keys[i] <= options_.lineage_slack * starting.best)
        starts.push_back(&starting.graphs[i]);
    for (const Graph* from : starts) {
      StepCounter lineage(&events_);
      so.observer = &lineage;
      const SearchResult r = substitution_search(*from, {}, rules_, cost, so);
      note(r, lineage);
    }
    return table;
  }

  // The table of piece k entered in layouts_[k-1][in] (or from the model's inputs), reusing the
  // table of an equal piece searched before.
  const Table& table(int k, int in) {
    const auto id = std::make_pair(k, in);
    if (auto it = tables_.find(id); it != tables_.end()) return it->second;
    const std::string key = reuse_key(k, in);
    if (auto it = reuse_.find(key); it != reuse_.end()) {
      if (auto renamed = rename_table(it->second, k, in)) {
        ++result_.reused;
        return tables_.emplace(id, std::move(*renamed)).first->second;
      }
    }
    Table searched = search_piece(k, k > 0 ? &layouts_[k - 1][in] : nullptr);
    reuse_.emplace(key, id);
    return tables_.emplace(id, std::move(searched)).first->second;
  }

  std::optional<Table> rename_table(std::pair<int, int> from, int k, int in) {
    const Table& source = tables_.at(from);
    const SegmentTemplate& a = templates_[from.first];
    const SegmentTemplate& b = templates_[k];
    const auto ids = detail::correspondence(a.body, b.body);
    if (ids.empty()) return std::nullopt;
    std::map<std::string, std::string> names;
    for (const auto& [x, y] : ids) names[a.body.node(x).op.name] = b.body.node(y).op.name;
    auto map_id = [&](NodeId id) {
      auto it = ids.find(id);
      return it == ids.end() ? id : it->second;
    };
    Table out;
    try {
      for (const auto& c : source.by_leaving) {
        Choice r;
        if (c.valid) {
          r.valid = true;
          r.key = c.key;
          r.piece.graph = detail::rename_graph(c.piece.graph, ids, names);
          r.piece.identity = map_id(c.piece.identity);
          r.piece.marker = map_id(c.piece.marker);
          r.piece.boundary_input = map_id(c.piece.boundary_input);
          for (NodeId e : c.piece.entry) r.piece.entry.insert(map_id(e));
          r.applied = c.applied;
          for (auto& sub : r.applied)
            for (auto& n : sub.nodes) n = detail::rename(n, names);
        }
        out.by_leaving.push_back(std::move(r));
      }
    } catch (const std::exception&) {
      return std::nullopt;  // the pieces are not equal after all: search this one
    }
    (void)in;
    return out;
  }

  void pieces(const SplitPlan& plan) {
    templates_ = cut_graph(g_, plan);
    const int m = static_cast<int>(templates_.size());
    result_.pieces = m;
    for (int k = 0; k + 1 < m; ++k) {
      const auto& s = g_.node(plan.cuts[k]).outputs.at(0);
      layouts_.push_back(boundary_layouts(s.sizes(), s.dtype, model_.machine()));
    }
    // Each piece may use the share of device memory its serial operators need of the whole.
    std::vector<double> need;
    for (const auto& t : templates_)
      need.push_back(MappingCost(t.body, model_).memory_upper_bound());
    const double total = std::accumulate(need.begin(), need.end(), 0.0);
    for (double n : need) piece_budget_.push_back(total > 0 ? budget_ * n / total : budget_);

    // Dynamic program over the cuts: prefix[i] is the best time of the pieces so far handing on
    // layout i; back[k][j] remembers which entering layout and choice led to layout j after piece
    // k.
    std::vector<double> prefix{0.0};
    std::vector<std::vector<std::pair<int, const Choice*>>> back(m);
    for (int k = 0; k < m; ++k) {
      // Entering layouts worth a search: ranked by the best prefix handing them on plus what the
      // piece costs at its best start in them (an optimistic look ahead), the best `beam` within
      // `beam_slack` of the first.
      std::vector<int> order(prefix.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return prefix[a] < prefix[b]; });
      std::vector<std::pair<double, int>> ranked;
      const std::size_t look =
          options_.beam > 0 ? 2 * static_cast<std::size_t>(options_.beam) : order.size();
      std::map<int, double> piece_estimate;
      double best_entry = kInfinity;
      for (int i : order) {
        if (!std::isfinite(prefix[i]) || ranked.size() >= look) break;
        piece_estimate[i] = entry_estimate(k, i, options_.lineage_slack * best_entry);
        best_entry = std::min(best_entry, piece_estimate[i]);
        ranked.emplace_back(prefix[i] + piece_estimate[i], i);
      }
      std::stable_sort(ranked.begin(), ranked.end());
      // The slack is a share of the piece's own cost, not of the whole prefix (which grows with
      // every piece and would let everything through at the end of a long model).
      const double slack =
          ranked.empty() ? 0
                         : options_.beam_slack * std::max(0.0, piece_estimate[ranked[0].second]);
      const int outs = k + 1 < m ? static_cast<int>(layouts_[k].size()) : 1;
      std::vector<double> next(outs, kInfinity);
      back[k].assign(outs, {-1, nullptr});
      int searched = 0;
      for (const auto& [estimate, i] : ranked) {
        if (options_.beam > 0 && searched >= options_.beam) break;
        if (searched > 0 && estimate > ranked[0].first + slack) break;
        ++searched;
        const Table& t = table(k, i);
        for (int j = 0; j < outs; ++j) {
          const Choice& c = t.by_leaving[j];
          if (!c.valid) continue;
          const double v = prefix[i] + c.key;
          if (v < next[j]) {
            next[j] = v;
            back[k][j] = {i, &c};
          }
        }
      }
      prefix = std::move(next);
    }
    // No piece plan maps (a model with parallel ops of a higher degree than the machine has
    // devices, as in the one-device phase of the sequential search): as whole() does, return no
    // graph, and the caller keeps the start, costed as infeasible.
    if (!back[m - 1][0].second) return;
    // Walk back from the last piece.
    std::vector<detail::GluePiece> chosen(m);
    for (int k = m - 1, j = 0; k >= 0; --k) {
      const auto [i, choice] = back[k][j];
      chosen[k].piece = &choice->piece;
      chosen[k].t = &templates_[k];
      if (k + 1 < m) chosen[k].leaving = layouts_[k][j];
      for (auto it = choice->applied.rbegin(); it != choice->applied.rend(); ++it)
        result_.applied.insert(result_.applied.begin(), *it);
      j = i;
    }
    result_.best = detail::glue(g_, chosen);
  }

  const Graph& g_;
  const RuleSet& rules_;
  const CostModel& model_;
  const HierarchicalOptions& options_;
  EventForwarder events_;
  detail::ConversionCosts conversions_;
  MappingCache cache_;
  double budget_ = 0;
  std::vector<SegmentTemplate> templates_;
  std::vector<std::vector<ParallelTensorShape>> layouts_;
  std::vector<double> piece_budget_;
  std::map<std::pair<int, int>, Table> tables_;
  std::map<std::string, std::pair<int, int>> reuse_;
  std::map<std::string, double> estimates_;
  HierarchicalResult result_;
};

}  // namespace

HierarchicalResult hierarchical_search(const Graph& g, const RuleSet& rules, const CostModel& model,
                                       const HierarchicalOptions& options) {
  return Hierarchy(g, rules, model, options).run();
}

}  // namespace unity
