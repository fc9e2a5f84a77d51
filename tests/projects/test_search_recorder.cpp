// SearchRecorder in one process: every event of a real search recorded in order and read back
// equal, batches visible to a second connection, and the search's final status.
#include <gtest/gtest.h>

#include <thread>

#include "project_test_util.h"
#include "synthetic_events.h"
#include "unity/core/errors.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/projects/project.h"
#include "unity/projects/search_recorder.h"

using namespace unity;
using namespace unity::projects;
using namespace unity::projects::testing;

namespace {

struct Capture : SearchObserver {
  std::vector<SearchEvent> events;
  void on_event(const SearchEvent& e) override { events.push_back(e); }
};

struct Both : SearchObserver {
  std::vector<SearchObserver*> to;
  void on_event(const SearchEvent& e) override {
    for (auto* o : to) o->on_event(e);
  }
};

void expect_same_event(const SearchEvent& a, const SearchEvent& b, std::size_t seq) {
  SCOPED_TRACE("seq " + std::to_string(seq));
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.rule, b.rule);
  EXPECT_EQ(a.matched_nodes, b.matched_nodes);
  EXPECT_EQ(a.matched_names, b.matched_names);
  EXPECT_EQ(a.parameters, b.parameters);
  // Bit-exact: SQLite REAL columns hold IEEE doubles.
  if (std::isnan(a.candidate_ms))
    EXPECT_TRUE(std::isnan(b.candidate_ms));
  else
    EXPECT_EQ(a.candidate_ms, b.candidate_ms);
  EXPECT_EQ(a.best_ms, b.best_ms);
  EXPECT_EQ(a.elapsed_seconds, b.elapsed_seconds);
  EXPECT_EQ(a.queue_size, b.queue_size);
  EXPECT_EQ(a.candidates_evaluated, b.candidates_evaluated);
  EXPECT_EQ(a.candidate_hash, b.candidate_hash);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.segment, b.segment);
  EXPECT_EQ(a.segments, b.segments);
  EXPECT_EQ(a.boundary, b.boundary);
}

SearchInfo info_for(Project& project, const Graph& model, const MachineSpec& machine,
                    const std::string& mode) {
  SearchInfo info;
  info.model_id = project.add_model(model, model.name);
  info.machine_id = project.add_machine(machine);
  info.devices = machine.num_devices();
  info.mode = mode;
  info.config = {{"budget", 40}};
  return info;
}

}  // namespace

TEST(SearchRecorder, RecordsEveryEventOfARealSearchInOrder) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  const MachineSpec machine = load_machine("summit", {0, 2});
  const Graph model = load_model_for_devices("mnist-mlp", 2);
  Capture capture;
  std::int64_t search_id = 0;
  Plan plan;
  {
    RecorderOptions small_batches;
    small_batches.batch_events = 7;  // many transactions, one partly filled at the end
    SearchRecorder recorder(project, info_for(project, model, machine, "joint"), small_batches);
    search_id = recorder.search_id();
    EXPECT_EQ(project.search(search_id)->status, "running");
    Both both;
    both.to = {&capture, &recorder};
    OptimizeOptions options;
    options.mode = "joint";
    options.budget = 40;
    options.observer = &both;
    plan = optimize_plan(model, machine, options);
    recorder.finish({plan.summary.search_seconds, plan.summary.iteration_time_ms,
                     plan.summary.candidates_evaluated});
    EXPECT_EQ(recorder.committed_events(), static_cast<std::int64_t>(capture.events.size()));
  }
  ASSERT_GT(capture.events.size(), 10u);
  EXPECT_EQ(capture.events.front().kind, SearchEvent::Kind::Started);
  EXPECT_EQ(capture.events.back().kind, SearchEvent::Kind::Finished);

  const auto steps = Project::open(dir / "p.unity", Access::ReadOnly).load_search_steps(search_id);
  ASSERT_EQ(steps.size(), capture.events.size());
  for (std::size_t i = 0; i < steps.size(); ++i) expect_same_event(capture.events[i], steps[i], i);
  // A live reader can fetch only what is new.
  const auto tail =
      project.load_search_steps(search_id, static_cast<std::int64_t>(steps.size()) - 3);
  ASSERT_EQ(tail.size(), 3u);
  expect_same_event(capture.events.back(), tail.back(), steps.size() - 1);

  const auto s = project.search(search_id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, "completed");
  EXPECT_EQ(s->end_reason, capture.events.back().status);
  EXPECT_EQ(s->model, "mnist-mlp");
  EXPECT_EQ(s->machine, machine.name);
  EXPECT_EQ(s->info.devices, 2);
  EXPECT_EQ(s->info.mode, "joint");
  EXPECT_EQ(s->info.config["budget"], 40);
  EXPECT_EQ(s->steps, static_cast<std::int64_t>(steps.size()));
  EXPECT_EQ(s->candidates_evaluated, plan.summary.candidates_evaluated);
  EXPECT_DOUBLE_EQ(*s->best_ms, plan.summary.iteration_time_ms);
  EXPECT_DOUBLE_EQ(*s->initial_ms, capture.events.front().best_ms);
  EXPECT_DOUBLE_EQ(*s->search_seconds, plan.summary.search_seconds);
  EXPECT_FALSE(s->finished_at.empty());
  EXPECT_EQ(project.counts().completed, 1);
}

TEST(SearchRecorder, FlushMakesEveryReportedEventVisibleToAnotherConnection) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  auto reader = Project::open(dir / "p.unity", Access::ReadOnly);
  RecorderOptions options;
  options.batch_events = 1000;
  options.batch_interval = std::chrono::hours(1);  // only flush() and finish() write
  SearchRecorder recorder(project, {}, options);
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 25; ++i) recorder.on_event(synthetic_event((round - 1) * 25 + i));
    recorder.flush();
    EXPECT_EQ(recorder.committed_events(), round * 25);
    EXPECT_EQ(reader.count_search_steps(recorder.search_id()), round * 25);
    EXPECT_EQ(reader.search(recorder.search_id())->status, "running");
  }
  const auto steps = reader.load_search_steps(recorder.search_id());
  for (std::size_t i = 0; i < steps.size(); ++i)
    expect_same_event(synthetic_event(static_cast<std::int64_t>(i)), steps[i], i);
}

TEST(SearchRecorder, ReaderOnAnotherThreadFollowsTheSearchWhileItRuns) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  RecorderOptions options;
  options.batch_events = 16;
  options.batch_interval = std::chrono::milliseconds(5);
  SearchRecorder recorder(project, {}, options);
  constexpr int kEvents = 3000;
  std::atomic<bool> done{false};
  std::vector<std::int64_t> counts;
  std::string reader_error;
  std::int64_t mismatches = 0;
  std::thread reader_thread([&] {
    try {
      auto reader = Project::open(dir / "p.unity", Access::ReadOnly);
      std::int64_t have = 0;  // fetch only the new steps, as the explorer does
      for (bool last = false; !last;) {
        last = done.load();
        for (const auto& e : reader.load_search_steps(recorder.search_id(), have)) {
          const auto expected = synthetic_event(have++);
          if (e.kind != expected.kind || e.candidate_hash != expected.candidate_hash ||
              e.rule != expected.rule)
            ++mismatches;
        }
        counts.push_back(have);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
    }
  });
  for (int i = 0; i < kEvents; ++i) {
    recorder.on_event(synthetic_event(i));
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  recorder.finish();
  done = true;
  reader_thread.join();
  EXPECT_EQ(reader_error, "");
  EXPECT_EQ(mismatches, 0);
  ASSERT_FALSE(counts.empty());
  EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
  EXPECT_EQ(counts.back(), kEvents);  // the read after the end sees everything, in order
  EXPECT_EQ(project.search(recorder.search_id())->status, "completed");
}

TEST(SearchRecorder, EndStatusFollowsTheSearch) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  auto finished = [](const std::string& status) {
    SearchEvent e;
    e.kind = SearchEvent::Kind::Finished;
    e.status = status;
    return e;
  };
  std::int64_t budget_id, cancelled_id, failed_id, abandoned_id;
  {
    SearchRecorder r(project, {});
    r.on_event(synthetic_event(0));
    r.on_event(finished("budget"));
    r.finish();
    budget_id = r.search_id();
  }
  {
    SearchRecorder r(project, {});
    r.on_event(finished("completed"));  // a sequential search's first phase
    r.on_event(synthetic_event(0));
    r.on_event(finished("cancelled"));
    r.finish();
    r.finish();  // a second end changes nothing
    r.fail("too late");
    cancelled_id = r.search_id();
  }
  {
    SearchRecorder r(project, {});
    r.on_event(synthetic_event(0));
    r.fail("no machine mapping of 'x' fits 6 devices");
    failed_id = r.search_id();
  }
  {
    SearchRecorder r(project, {});
    r.on_event(synthetic_event(0));
    abandoned_id = r.search_id();
  }
  EXPECT_EQ(project.search(budget_id)->status, "completed");
  EXPECT_EQ(project.search(budget_id)->end_reason, "budget");
  EXPECT_EQ(project.search(cancelled_id)->status, "cancelled");
  EXPECT_EQ(project.search(cancelled_id)->steps, 3);
  EXPECT_EQ(project.search(failed_id)->status, "failed");
  EXPECT_EQ(project.search(failed_id)->end_reason, "no machine mapping of 'x' fits 6 devices");
  EXPECT_EQ(project.search(abandoned_id)->status, "failed");
  EXPECT_EQ(project.search(abandoned_id)->steps, 1);  // what it was told is kept
  const auto c = project.counts();
  EXPECT_EQ(c.searches, 4);
  EXPECT_EQ(c.completed, 1);
  EXPECT_EQ(c.cancelled, 1);
  EXPECT_EQ(c.failed, 2);
}

TEST(SearchRecorder, DiscardLeavesNoTrace) {
  TempDir dir;
  auto project = Project::create(dir / "p.unity");
  {
    SearchRecorder r(project, {});
    r.on_event(synthetic_event(0));
    r.flush();
    r.discard();
  }
  EXPECT_EQ(project.counts().searches, 0);
}

TEST(SearchRecorder, ReadOnlyProjectCannotRecord) {
  TempDir dir;
  Project::create(dir / "p.unity");
  const auto reader = Project::open(dir / "p.unity", Access::ReadOnly);
  EXPECT_THROW(SearchRecorder(reader, {}), InputError);
}
