#pragma once
// The SQL of the searches and search_steps tables, shared by Project (reads) and SearchRecorder
// (writes on its own connection).
#include <cstdint>
#include <optional>
#include <vector>

#include "process_owner.h"
#include "sqlite_db.h"
#include "unity/core/search_observer.h"
#include "unity/projects/records.h"

namespace unity::projects::detail {

// Prepared statements for recording one search; use inside a Transaction.
class SearchWriter {
 public:
  explicit SearchWriter(Connection& connection);

  std::int64_t insert_search(const SearchInfo& info, const ProcessOwner& owner,
                             std::optional<double> initial_ms);
  void insert_step(std::int64_t search_id, std::int64_t seq, const SearchEvent& event);
  // Progress a live reader (and an interrupted search) keeps: best cost, candidates, time so far.
  void update_progress(std::int64_t search_id, const SearchEvent& latest,
                       std::optional<double> best_ms);
  void finish(std::int64_t search_id, std::string_view status, std::string_view reason);

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
std::vector<SearchEvent> query_search_steps(Connection& connection, std::int64_t search_id);

// Marks 'running' rows of `table` (searches or runs) whose owner process is gone as interrupted.
void mark_dead_owners(Connection& connection, const char* table);

}  // namespace unity::projects::detail
