#pragma once
// `--progress`: one line on stderr per expanded candidate (at most ten a second) and one at the
// end.
#include <chrono>

#include <fmt/format.h>

#include "unity/core/search/search_observer.h"

namespace unity::cli {

class ProgressPrinter : public SearchObserver {
 public:
  void on_event(const SearchEvent& e) override {
    const auto now = std::chrono::steady_clock::now();
    const bool last = e.kind == SearchEvent::Kind::Finished;
    if (!last &&
        (e.kind != SearchEvent::Kind::StepDone || now - last_ < std::chrono::milliseconds(100)))
      return;
    last_ = now;
    fmt::print(stderr, "search: step {} | {} candidates | queue {} | best {:.3f} ms | {:.1f} s{}\n",
               e.step, e.candidates_evaluated, e.queue_size, e.best_ms, e.elapsed_seconds,
               last ? " | " + e.status : "");
  }

 private:
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace unity::cli
