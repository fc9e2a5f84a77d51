#pragma once
// `--progress`: what the search is doing, on stderr: one line when it starts, one per expanded
// candidate (at most ten a second), one when a piece of a split graph (paper 5.3) begins, and one
// at the end.
//
// "best plan" is the best whole plan found so far that fits in memory: the least of the bests the
// search's lineages (and the plan's earlier searches) report, so it never rises. One printer
// follows one plan's searches. A graph searched piece by piece has no whole plan
// until its last piece is searched; its lines say which piece runs and that piece's best, labelled
// as the piece's (a later piece is a different part of the model, and costs what it costs).
#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "unity/core/search/search_observer.h"

namespace unity::cli {

class ProgressPrinter : public SearchObserver {
 public:
  void on_event(const SearchEvent& e) override {
    using Kind = SearchEvent::Kind;
    const auto now = std::chrono::steady_clock::now();
    if (e.kind == Kind::Started && e.segment < 0) {
      // A plan may take several searches (the joint one from the model, then from its algebraic
      // rewrites): the best plan runs on across them.
      start_ = now;
      piece_best_ms_ = kNone;
      segment_ = -1;
      fmt::print(stderr, "search: {} | its start on one device: {:.3f} ms{}\n",
                 e.phase.empty() ? "started" : e.phase, e.best_ms,
                 e.best_fits ? "" : " (does not fit)");
      return;
    }
    const double seconds = std::chrono::duration<double>(now - start_).count();
    if (e.kind == Kind::Finished) {
      if (e.best_fits) best_plan_ms_ = std::min(best_plan_ms_, e.best_ms);
      if (best_plan_ms_ < kNone)
        fmt::print(stderr, "search: done ({}) | {} candidates | best plan {:.3f} ms | {:.1f} s\n",
                   e.status, e.candidates_evaluated, best_plan_ms_, seconds);
      else
        fmt::print(stderr,
                   "search: done ({}) | {} candidates | no plan fits; the least over memory "
                   "takes {:.3f} ms | {:.1f} s\n",
                   e.status, e.candidates_evaluated, e.best_ms, seconds);
      return;
    }
    if (e.kind != Kind::StepDone) return;
    if (e.segment >= 0 && e.segment != segment_) {
      segment_ = e.segment;
      piece_best_ms_ = kNone;
      fmt::print(stderr, "search: piece {} of {}{}\n", e.segment + 1, e.segments,
                 e.boundary.empty() ? "" : ", entered as " + e.boundary);
    }
    const bool piece = e.segment >= 0;
    if (e.best_fits) {
      double& best = piece ? piece_best_ms_ : best_plan_ms_;
      best = std::min(best, e.best_ms);
    }
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double best = piece ? piece_best_ms_ : best_plan_ms_;
    const std::string best_text =
        best == kNone
            ? "no plan fits yet"
            : fmt::format("{} {:.3f} ms", piece ? "this piece's best" : "best plan", best);
    fmt::print(stderr, "search: {}step {} | {} candidates | queue {} | {} | {:.1f} s\n",
               piece ? fmt::format("piece {} of {} | ", e.segment + 1, e.segments) : "", e.step,
               e.candidates_evaluated, e.queue_size, best_text, seconds);
  }

 private:
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
  double best_plan_ms_ = kNone, piece_best_ms_ = kNone;
  int segment_ = -1;
};

}  // namespace unity::cli
