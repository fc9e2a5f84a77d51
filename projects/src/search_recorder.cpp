#include "unity/projects/search_recorder.h"

#include <algorithm>

#include <fmt/format.h>

#include "connection_setup.h"
#include "process_owner.h"
#include "search_store.h"
#include "sqlite_db.h"
#include "unity/core/errors.h"

namespace unity::projects {

SearchRecorder::SearchRecorder(const Project& project, const SearchInfo& info,
                               RecorderOptions options)
    : file_(project.file()), options_(options), started_(std::chrono::steady_clock::now()) {
  if (project.read_only())
    throw InputError(
        fmt::format("'{}': cannot record a search: the project is open read-only", file_.string()));
  if (options_.batch_events == 0) options_.batch_events = 1;
  // Its own connection: the search's thread and the caller's Project never wait for each other
  // (SQLite serialises writers through the file lock, with a busy timeout).
  connection_ = detail::open_writer(file_);
  writer_ = std::make_unique<detail::SearchWriter>(*connection_);
  detail::Transaction tx(*connection_);
  search_id_ = writer_->insert_search(info, detail::current_process());
  tx.commit();
  writer_thread_ = std::thread([this] { writer_loop(); });
}

SearchRecorder::~SearchRecorder() {
  try {
    fail("abandoned: the recording ended before the search reported its end");
  } catch (...) {
    // A destructor must not throw; the row stays 'running' and reads as interrupted once this
    // process is gone.
  }
  if (writer_thread_.joinable()) writer_thread_.join();
}

void SearchRecorder::on_event(const SearchEvent& event) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  queue_.push_back(event);
  ++reported_;
  if (queue_.size() == options_.batch_events) wake_writer_.notify_one();
}

void SearchRecorder::flush() {
  std::unique_lock lock(mutex_);
  const std::int64_t target = reported_;
  flush_requested_ = true;
  wake_writer_.notify_one();
  batch_committed_.wait(lock, [&] { return committed_ >= target || write_error_ || writer_done_; });
  if (write_error_) std::rethrow_exception(write_error_);
}

std::int64_t SearchRecorder::committed_events() const {
  std::lock_guard lock(mutex_);
  return committed_;
}

std::int64_t SearchRecorder::reported_events() const {
  std::lock_guard lock(mutex_);
  return reported_;
}

void SearchRecorder::writer_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_writer_.wait_for(lock, options_.batch_interval, [&] {
      return stopping_ || flush_requested_ || queue_.size() >= options_.batch_events;
    });
    std::vector<SearchEvent> batch;
    if (!queue_.empty()) {
      batch.swap(queue_);
      queue_.reserve(std::min<std::size_t>(options_.batch_events, 4096));  // appends stay cheap
    }
    flush_requested_ = false;
    const bool stop = stopping_;
    const bool failed = static_cast<bool>(write_error_);
    lock.unlock();
    std::exception_ptr error;
    if (!batch.empty() && !failed) {
      try {
        write_batch(batch);
      } catch (...) {
        error = std::current_exception();
      }
    }
    lock.lock();
    if (error)
      write_error_ = error;
    else if (!failed)
      committed_ += static_cast<std::int64_t>(batch.size());
    if (stop && queue_.empty()) {
      writer_done_ = true;
      batch_committed_.notify_all();
      return;
    }
    batch_committed_.notify_all();
  }
}

void SearchRecorder::write_batch(const std::vector<SearchEvent>& batch) {
  detail::Transaction tx(*connection_);
  std::int64_t seq = next_seq_;
  for (const auto& e : batch) writer_->insert_step(search_id_, seq++, e);
  // The row's progress columns, for a live reader and for what an interrupted search leaves.
  for (const auto& e : batch) {
    if (e.kind == SearchEvent::Kind::Started && !initial_ms_) initial_ms_ = e.best_ms;
    best_ms_ = e.best_ms;
    // A sequential search reports two phases, each counting its candidates from zero.
    candidates_ = candidates_before_phase_ + e.candidates_evaluated;
    if (e.kind == SearchEvent::Kind::Finished) {
      candidates_before_phase_ += e.candidates_evaluated;
      last_finished_status_ = e.status;
    }
  }
  detail::SearchProgress progress;
  progress.initial_ms = initial_ms_;
  progress.best_ms = best_ms_;
  progress.candidates_evaluated = candidates_;
  progress.search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  writer_->update_progress(search_id_, progress);
  tx.commit();
  next_seq_ = seq;
}

bool SearchRecorder::stop_writer() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    stopping_ = true;
  }
  wake_writer_.notify_one();
  writer_thread_.join();
  return true;
}

void SearchRecorder::write_end(Status status, std::string_view reason,
                               const SearchOutcome& outcome) {
  detail::SearchProgress progress;
  progress.initial_ms = initial_ms_;
  progress.best_ms = outcome.best_ms ? outcome.best_ms : best_ms_;
  progress.candidates_evaluated = outcome.candidates_evaluated.value_or(candidates_);
  progress.search_seconds = outcome.search_seconds.value_or(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  // The end is written even after a failed batch, so the row does not stay 'running'; the batch's
  // error is the one reported.
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = write_error_;
  }
  try {
    detail::Transaction tx(*connection_);
    writer_->finish(search_id_, to_string(status), reason, progress);
    tx.commit();
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("recording search {} into '{}' failed: {}", search_id_,
                                           file_.string(), e.what()));
    }
  }
}

void SearchRecorder::finish(const SearchOutcome& outcome) {
  if (!stop_writer()) return;
  // The search's own word on how it ended: its last Finished event (known once the queue drained).
  const std::string reason = last_finished_status_.empty() ? "completed" : last_finished_status_;
  write_end(status_from_string(reason) == Status::Cancelled ? Status::Cancelled : Status::Completed,
            reason, outcome);
}

void SearchRecorder::fail(const std::string& reason) {
  if (!stop_writer()) return;
  write_end(Status::Failed, reason, {});
}

void SearchRecorder::discard() {
  if (!stop_writer()) return;
  detail::Transaction tx(*connection_);
  detail::Statement remove(*connection_, "DELETE FROM searches WHERE id = ?1");  // steps cascade
  remove.bind(1, search_id_);
  remove.run();
  tx.commit();
}

}  // namespace unity::projects
