// Another process records a search (unity_project_test_writer); this one reads beside it, then
// kills it with SIGKILL: every committed step must survive and the search must read 'interrupted'.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "project_test_util.h"
#include "synthetic_events.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/projects/project.h"

using namespace unity;
using namespace unity::projects;
using namespace unity::projects::testing;

namespace {

// The writer process, with its stdout on a pipe.
class WriterProcess {
 public:
  WriterProcess(const fs::path& file, std::int64_t count, std::int64_t interval_us,
                std::int64_t flush_every) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      const std::string a = std::to_string(count), b = std::to_string(interval_us),
                        c = std::to_string(flush_every);
      ::execl(UNITY_PROJECT_TEST_WRITER, UNITY_PROJECT_TEST_WRITER, file.c_str(), a.c_str(),
              b.c_str(), c.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
  }
  ~WriterProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  // The next line the writer printed ("" at its end).
  std::string read_line() {
    char buffer[256];
    if (!std::fgets(buffer, sizeof buffer, out_)) return "";
    std::string line(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  int kill_and_reap(int signal) {
    ::kill(pid_, signal);
    return wait();
  }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::FILE* out_ = nullptr;
};

std::string stored_status(const fs::path& file, std::int64_t search_id) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT status FROM searches WHERE id = ?1", -1, &s, nullptr);
  sqlite3_bind_int64(s, 1, search_id);
  std::string status = sqlite3_step(s) == SQLITE_ROW
                           ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                           : "(no row)";
  sqlite3_finalize(s);
  sqlite3_close(db);
  return status;
}

}  // namespace

TEST(CrashAndReaders, SigkillKeepsEveryCommittedStepAndReadsInterrupted) {
  TempDir dir;
  const auto file = dir / "p.unity";
  Project::create(file);
  WriterProcess writer(file, /*count=*/0, /*interval_us=*/50, /*flush_every=*/0);  // runs forever
  const std::int64_t search_id = std::stoll(writer.read_line());

  auto reader = Project::open(file, Access::ReadOnly);
  EXPECT_EQ(reader.search(search_id)->status, "running");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reader.count_search_steps(search_id) < 1000 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // What was committed before the kill (the writer keeps committing while we read this).
  const auto seen = reader.load_search_steps(search_id);
  ASSERT_GE(seen.size(), 1000u);

  const int status = writer.kill_and_reap(SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // Already the open reader sees the dead owner; the row itself still says 'running'.
  EXPECT_EQ(reader.search(search_id)->status, "interrupted");
  EXPECT_EQ(reader.counts().interrupted, 1);
  EXPECT_EQ(stored_status(file, search_id), "running");
  { const Project closing = std::move(reader); }

  {
    auto project = Project::open(file, Access::ReadWrite);  // recovers the log, marks the row
    const auto search = project.search(search_id);
    ASSERT_TRUE(search);
    EXPECT_EQ(search->status, "interrupted");
    EXPECT_EQ(search->end_reason, "its process ended without finishing");
    EXPECT_FALSE(search->finished_at.empty());
    ASSERT_GE(search->steps, static_cast<std::int64_t>(seen.size()));
    const auto steps = project.load_search_steps(search_id);
    ASSERT_EQ(static_cast<std::int64_t>(steps.size()), search->steps);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto expected = synthetic_event(static_cast<std::int64_t>(i));
      ASSERT_EQ(steps[i].kind, expected.kind) << i;
      ASSERT_EQ(steps[i].candidate_hash, expected.candidate_hash) << i;
      ASSERT_EQ(steps[i].matched_names, expected.matched_names) << i;
      ASSERT_EQ(steps[i].candidate_ms, expected.candidate_ms) << i;
    }
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(steps[i].rule, seen[i].rule) << i;
    // The progress columns were kept up to date batch by batch.
    ASSERT_TRUE(search->best_ms);
    EXPECT_GT(search->candidates_evaluated, 0);
  }
  EXPECT_EQ(stored_status(file, search_id), "interrupted");
  // The project is healthy: it takes new work and closes cleanly.
  {
    auto project = Project::open(file);
    project.add_model(zoo::build("mnist-mlp", 64), "mnist-mlp");
    EXPECT_EQ(project.counts().interrupted, 1);
  }
  EXPECT_EQ(sidecars(file), "");
}

TEST(CrashAndReaders, AnotherProcessReadsAndWritesWhileTheSearchRecords) {
  TempDir dir;
  const auto file = dir / "p.unity";
  Project::create(file);
  constexpr std::int64_t kEvents = 6000, kFlushEvery = 1000;
  WriterProcess writer(file, kEvents, /*interval_us=*/100, kFlushEvery);
  const std::int64_t search_id = std::stoll(writer.read_line());

  auto reader = Project::open(file, Access::ReadOnly);
  std::int64_t have = 0;
  for (std::int64_t round = 1; round <= kEvents / kFlushEvery; ++round) {
    // The writer says what it has committed; a reader must see at least that much, consistent.
    EXPECT_EQ(writer.read_line(), "committed " + std::to_string(round * kFlushEvery));
    const auto search = reader.search(search_id);
    ASSERT_TRUE(search);
    if (round < kEvents / kFlushEvery) {
      EXPECT_EQ(search->status, "running");  // it goes on
    }
    EXPECT_GE(search->steps, round * kFlushEvery);
    for (const auto& e : reader.load_search_steps(search_id, have)) {
      const auto expected = synthetic_event(have++);
      ASSERT_EQ(e.candidate_hash, expected.candidate_hash);
      ASSERT_EQ(e.parameters, expected.parameters);
    }
    EXPECT_GE(have, round * kFlushEvery);
    if (round == 2) {
      // A second writer (the explorer pinning a rule) waits its turn instead of failing, and does
      // not take the live search for a dead one.
      auto editor = Project::open(file, Access::ReadWrite);
      const auto model = editor.add_model(zoo::build("mnist-mlp", 64), "mnist-mlp");
      editor.set_pin_veto(model, "partition_linear", nullptr, RuleChoice::Veto);
      EXPECT_EQ(editor.search(search_id)->status, "running");
    }
  }
  EXPECT_EQ(writer.read_line(), "");  // the writer finished
  const int status = writer.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto search = reader.search(search_id);
  EXPECT_EQ(search->status, "completed");
  EXPECT_EQ(search->steps, kEvents);
  EXPECT_EQ(reader.counts().pins_vetoes, 1);
}
