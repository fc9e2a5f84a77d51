#pragma once
// A deterministic stream of search events: event `seq` is a pure function of seq, so a test can
// check every recorded row against what must have been reported, whichever process reported it.
#include <cstdint>
#include <string>

#include "unity/core/search/search_observer.h"

namespace unity::projects::testing {

inline SearchEvent synthetic_event(std::int64_t seq) {
  SearchEvent e;
  if (seq == 0) {
    e.kind = SearchEvent::Kind::Started;
  } else {
    switch (seq % 4) {
      case 1:
        e.kind = SearchEvent::Kind::CandidateCosted;
        break;
      case 2:
        e.kind = seq % 8 == 2 ? SearchEvent::Kind::NewBest : SearchEvent::Kind::Pruned;
        break;
      default:
        e.kind = SearchEvent::Kind::StepDone;
    }
  }
  e.step = seq / 4;
  if (e.kind != SearchEvent::Kind::StepDone && seq > 0) {
    e.rule = "rule-" + std::to_string(seq % 7);
    e.matched_nodes = {seq % 11, seq % 13 + 20};
    e.matched_names = {"node" + std::to_string(seq % 11), "node" + std::to_string(seq % 13 + 20)};
    e.parameters = {{"degree", 2 + seq % 3}, {"dim", seq % 2}};
  }
  e.candidate_ms = 100.0 + 0.25 * static_cast<double>(seq);
  e.best_ms = 100.0 - 1.0 / static_cast<double>(seq + 1);
  e.elapsed_seconds = 0.001 * static_cast<double>(seq);
  e.queue_size = seq % 17;
  e.candidates_evaluated = seq / 2;
  e.candidate_hash = static_cast<std::uint64_t>(seq) * 0x9E3779B97F4A7C15ull;  // top bit set often
  if (seq % 5 == 0) {
    e.segment = static_cast<int>(seq % 3);
    e.segments = 3;
    e.boundary = "cut-" + std::to_string(seq % 3);
  }
  return e;
}

}  // namespace unity::projects::testing
