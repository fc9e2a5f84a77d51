#pragma once
// The SQL of the searches and search_steps tables, shared by Project (reads) and SearchRecorder
// (writes on its own connection).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "process_owner.h"
#include "sqlite_db.h"
#include "unity/core/search/search_observer.h"
#include "unity/projects/records.h"

namespace unity::projects::detail {

// What a search row says when it ends (or so far, while it runs).
struct SearchProgress {
  std::optional<double> initial_ms;
  std::optional<double> best_ms;
  std::int64_t candidates_evaluated = 0;
  double search_seconds = 0;
};

// Prepared statements for recording one search; use inside a Transaction.
class SearchWriter {
 public:
  explicit SearchWriter(Connection& connection);

  std::int64_t insert_search(const SearchInfo& info, const ProcessOwner& owner);
  void insert_step(std::int64_t search_id, std::int64_t seq, const SearchEvent& event);
  // Progress a live reader (and an interrupted search) keeps: best cost, candidates, time so far.
  void update_progress(std::int64_t search_id, const SearchProgress& progress);
  void finish(std::int64_t search_id, std::string_view status, std::string_view reason,
              const SearchProgress& progress);

 private:
  Connection& connection_;
  Statement insert_search_;
  Statement insert_step_;
  Statement update_progress_;
  Statement finish_;
};

// Rows of `searches` (all, or the one with `id`), with 'running' rows whose owner process is gone
// reported as 'interrupted'.
std::vector<SearchRecord> query_searches(Connection& connection,
                                         std::optional<std::int64_t> id = std::nullopt);
// Every search's status, read the same way (for counts).
std::vector<std::string> query_search_statuses(Connection& connection);
// The recorded events with seq >= first_seq, in order; at most `limit` of them (< 0: all).
std::vector<SearchEvent> query_search_steps(Connection& connection, std::int64_t search_id,
                                            std::int64_t first_seq = 0, std::int64_t limit = -1);

// The status a row reads as: 'running' of a process that is gone is 'interrupted'.
std::string effective_status(const std::string& stored, const ProcessOwner& owner);
// Marks 'running' rows of `table` (searches or runs) whose owner process is gone as interrupted.
void mark_dead_owners(Connection& connection, const char* table);

}  // namespace unity::projects::detail
