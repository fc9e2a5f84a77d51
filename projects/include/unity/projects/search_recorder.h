#pragma once
// Records a running search into a project: every SearchEvent becomes a search_steps row, written in
// batches by a writer thread on its own connection, so the search thread only appends to a queue.
//
// A batch is one transaction: after a crash (SIGKILL included) the project holds every batch that
// committed, and the search reads as 'interrupted'. Readers (the explorer, `unity project show`)
// see the steps appear batch by batch.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "unity/core/search/search_observer.h"
#include "unity/projects/project.h"
#include "unity/projects/records.h"

namespace unity::projects {

namespace detail {
class Connection;
class SearchWriter;
}  // namespace detail

struct RecorderOptions {
  // A write transaction every `batch_events` events or every `batch_interval`, whichever comes
  // first: small enough that a live reader sees progress and a crash loses little, large enough
  // that a commit per batch costs nothing next to the search.
  std::size_t batch_events = 512;
  std::chrono::milliseconds batch_interval{250};
};

// How a search ended, when the caller knows better than the events (the plan's own figures).
struct SearchOutcome {
  std::optional<double> search_seconds;
  std::optional<double> best_ms;
  std::optional<std::int64_t> candidates_evaluated;
};

class SearchRecorder : public SearchObserver {
 public:
  // Inserts the search row (status 'running', owned by this process) and starts the writer thread.
  // Throws InputError when the project is read-only.
  SearchRecorder(const Project& project, const SearchInfo& info, RecorderOptions options = {});
  // Ends an unfinished recording as 'failed' ("abandoned"); never throws.
  ~SearchRecorder() override;
  SearchRecorder(const SearchRecorder&) = delete;
  SearchRecorder& operator=(const SearchRecorder&) = delete;

  std::int64_t search_id() const { return search_id_; }

  // Called on the search's thread: copies the event into the queue and returns.
  void on_event(const SearchEvent& event) override;

  // Waits until every event reported so far is committed (a reader then sees all of them).
  void flush();
  // Events committed so far, and handed to on_event so far.
  std::int64_t committed_events() const;
  std::int64_t reported_events() const;

  // Commits what is queued and marks the search 'cancelled' when its last Finished event says so,
  // else 'completed'; end_reason is that event's status ("completed", "budget", "cancelled").
  // Rethrows a write error of the writer thread (std::runtime_error naming the file).
  void finish(const SearchOutcome& outcome = {});
  // Commits what is queued and marks the search 'failed' with `reason` (the search threw).
  void fail(const std::string& reason);
  // Deletes the search and its steps (it was refused before it started, e.g. a bad flag).
  void discard();

 private:
  void writer_loop();
  void write_batch(const std::vector<SearchEvent>& batch);
  // Lets the writer thread commit what is queued and joins it; false when the recording had
  // already ended.
  bool stop_writer();
  void write_end(Status status, std::string_view reason, const SearchOutcome& outcome);

  std::filesystem::path file_;
  RecorderOptions options_;
  std::unique_ptr<detail::Connection> connection_;
  std::unique_ptr<detail::SearchWriter> writer_;
  std::int64_t search_id_ = 0;
  std::chrono::steady_clock::time_point started_;

  mutable std::mutex mutex_;
  std::condition_variable wake_writer_;
  std::condition_variable batch_committed_;
  std::vector<SearchEvent> queue_;
  std::int64_t reported_ = 0;   // events handed to on_event
  std::int64_t committed_ = 0;  // events written and committed
  bool flush_requested_ = false;
  bool stopping_ = false;     // set once: no more events are taken
  bool writer_done_ = false;  // the writer thread has returned
  std::exception_ptr write_error_;
  std::thread writer_thread_;

  // Writer-thread state (no lock needed: only the writer thread touches it until it is joined).
  std::int64_t next_seq_ = 0;
  std::optional<double> initial_ms_;
  std::optional<double> best_ms_;
  std::int64_t candidates_before_phase_ = 0;  // candidates of earlier Started..Finished phases
  std::int64_t candidates_ = 0;
  std::string last_finished_status_;
};

}  // namespace unity::projects
