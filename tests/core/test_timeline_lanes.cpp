// The communication lanes of a predicted pipeline timeline (issue 29): each pass's point-to-point
// sends beside it, the data-parallel gradient synchronisation and the optimizer step after the
// flush, so that the timeline ends where the plan's iteration time does. Worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::timeline_lanes_test {
namespace {

// Two stages of one chunk each (forward 1 s, backward 2 s, 0.4 s of sends a micro-batch), two
// micro-batches; rank 0 synchronises 0.8 s of gradients of which 0.5 s show, rank 1 0.6 s of which
// 0.3 s; the optimizer step takes 0.25 s.
PipelinePlan two_stages() {
  PipelinePlan p;
  p.pipeline_stages = 2;
  p.micro_batches = 2;
  p.data_parallel = 2;
  p.overlap_grad_reduce = true;  // no effect on the sends of a plain 1F1B schedule
  for (int c = 0; c < 2; ++c) {
    StagePlan s;
    s.rank = c;
    s.first_layer = s.last_layer = c;
    s.forward = 1.0;
    s.backward = 2.0;
    s.p2p = 0.4;
    p.chunks.push_back(s);
  }
  p.pipeline_time = 3 * 3.4;  // (m + p - 1) x (1 + 2 + 0.4)
  p.sync_time = 0.5;
  p.update_time = 0.25;
  p.rank_sync_total = {0.8, 0.6};
  p.rank_sync_exposed = {0.5, 0.3};
  p.iteration_time = p.pipeline_time + p.sync_time + p.update_time;
  return p;
}

std::vector<CommBox> of(const PipelineTimeline& t, int rank, const std::string& kind) {
  std::vector<CommBox> out;
  for (const CommBox& c : t.comm)
    if (c.rank == rank && c.kind == kind) out.push_back(c);
  return out;
}

TEST(TimelineLanes, SyncAndOptimizerStepFollowTheFlushByHand) {
  const PipelinePlan plan = two_stages();
  const PipelineTimeline t = predicted_timeline(plan);
  // Rank 0: F0 [0, 1.2], F1 [1.2, 2.4], B0 [4.6, 6.8], B1 [8.0, 10.2] (waits for rank 1's B1).
  EXPECT_NEAR(t.makespan, 10.2, 1e-12);
  EXPECT_NEAR(t.bubble_fraction, 3.4 / 6.8, 1e-12);  // the sends count as the stage's work
  // Compute boxes hold the compute only: rank 0's last backward is [8.0, 10.0].
  const auto last = std::max_element(t.boxes.begin(), t.boxes.end(), [](auto& a, auto& b) {
    return std::make_pair(a.rank == 0, a.end) < std::make_pair(b.rank == 0, b.end);
  });
  EXPECT_NEAR(last->start, 8.0, 1e-12);
  EXPECT_NEAR(last->end, 10.0, 1e-12);
  for (const TimelineBox& b : t.boxes) EXPECT_NEAR(b.end - b.start, b.backward ? 2.0 : 1.0, 1e-12);
  // Every pass's 0.2 s of sends exposed right after its compute (1F1B waits for them).
  for (int r = 0; r < 2; ++r) {
    const auto p2p = of(t, r, kCommP2p);
    ASSERT_EQ(p2p.size(), 4u) << r;
    for (const CommBox& c : p2p) {
      EXPECT_TRUE(c.exposed);
      EXPECT_NEAR(c.end - c.start, 0.2, 1e-12);
      EXPECT_TRUE(std::any_of(t.boxes.begin(), t.boxes.end(), [&](const TimelineBox& b) {
        return b.rank == r && std::abs(b.end - c.start) < 1e-12;
      }));
    }
  }
  // Gradient sync: the hidden 0.3 s end with the rank's last backward compute (rank 0: 10.0,
  // rank 1: B1 [5.8, 7.8]); the exposed part starts at the flush.
  const auto s0 = of(t, 0, kCommGradientSync), s1 = of(t, 1, kCommGradientSync);
  ASSERT_EQ(s0.size(), 2u);
  ASSERT_EQ(s1.size(), 2u);
  EXPECT_FALSE(s0[0].exposed);
  EXPECT_NEAR(s0[0].start, 9.7, 1e-12);
  EXPECT_NEAR(s0[0].end, 10.0, 1e-12);
  EXPECT_TRUE(s0[1].exposed);
  EXPECT_NEAR(s0[1].start, 10.2, 1e-12);
  EXPECT_NEAR(s0[1].end - s0[1].start, plan.sync_time, 1e-12);
  EXPECT_FALSE(s1[0].exposed);
  EXPECT_NEAR(s1[0].start, 7.5, 1e-12);
  EXPECT_NEAR(s1[0].end, 7.8, 1e-12);
  EXPECT_NEAR(s1[1].start, 10.2, 1e-12);
  EXPECT_NEAR(s1[1].end, 10.5, 1e-12);
  // The optimizer step once the slowest synchronisation is done, on every rank.
  for (int r = 0; r < 2; ++r) {
    const auto step = of(t, r, kCommOptimizerStep);
    ASSERT_EQ(step.size(), 1u);
    EXPECT_NEAR(step[0].start, 10.2 + plan.sync_time, 1e-12);
    EXPECT_NEAR(step[0].end - step[0].start, plan.update_time, 1e-12);
  }
  // The last box ends at the plan's iteration time.
  double end = 0;
  for (const CommBox& c : t.comm) end = std::max(end, c.end);
  EXPECT_NEAR(end, plan.iteration_time, 1e-12);
  EXPECT_NEAR(t.end(), plan.iteration_time, 1e-12);
}

TEST(TimelineLanes, PlansWithoutPerRankSyncShowAllOfItExposed) {
  PipelinePlan plan = two_stages();
  plan.rank_sync_total.clear();
  plan.rank_sync_exposed.clear();
  const PipelineTimeline t = predicted_timeline(plan);
  for (int r = 0; r < 2; ++r) {
    const auto sync = of(t, r, kCommGradientSync);
    ASSERT_EQ(sync.size(), 1u);
    EXPECT_TRUE(sync[0].exposed);
    EXPECT_NEAR(sync[0].end - sync[0].start, 0.5, 1e-12);
  }
  EXPECT_NEAR(t.end(), plan.iteration_time, 1e-12);
}

TEST(TimelineLanes, OverlappedInterleavedSendsHideBehindTheirPasses) {
  // Megatron-Core's interleaved schedule with overlapped sends: 2 stages x 2 chunks, sends of
  // 0.6 s a micro-batch behind 3 s of compute, so nothing is exposed and the schedule is the
  // compute's.
  PipelinePlan p;
  p.pipeline_stages = 2;
  p.interleave = 2;
  p.micro_batches = 2;
  p.overlap_grad_reduce = true;
  for (int c = 0; c < 4; ++c) {
    StagePlan s;
    s.rank = c % 2;
    s.forward = 1.0;
    s.backward = 2.0;
    s.p2p = 0.6;
    p.chunks.push_back(s);
  }
  const PipelineTimeline t = predicted_timeline(p);
  EXPECT_NEAR(t.makespan, simulate_pipeline({1, 1, 1, 1}, {2, 2, 2, 2}, 2, 2, 2).makespan, 1e-12);
  const auto hidden0 = of(t, 0, kCommP2p), hidden1 = of(t, 1, kCommP2p);
  ASSERT_EQ(hidden0.size() + hidden1.size(), t.boxes.size());  // one a pass
  for (const CommBox& c : t.comm) {
    ASSERT_EQ(c.kind, kCommP2p);
    EXPECT_FALSE(c.exposed);
    EXPECT_NEAR(c.end - c.start, 0.3, 1e-12);
    // Inside one of its rank's compute boxes.
    EXPECT_TRUE(std::any_of(t.boxes.begin(), t.boxes.end(), [&](const TimelineBox& b) {
      return b.rank == c.rank && b.start <= c.start + 1e-12 && c.end <= b.end + 1e-12;
    }));
  }
  // Sends that outlast the compute: what outlasts it is exposed, after the pass.
  for (auto& s : p.chunks) s.p2p = 5.0;  // exposed 5 - 3 = 2 a micro-batch, 1 a pass
  const PipelineTimeline slow = predicted_timeline(p);
  int exposed = 0;
  for (const CommBox& c : slow.comm)
    if (c.exposed) {
      ++exposed;
      EXPECT_NEAR(c.end - c.start, 1.0, 1e-12);
    }
  EXPECT_EQ(exposed, static_cast<int>(slow.boxes.size()));
}

TEST(TimelineLanes, ChromeTraceHasACommunicationThreadPerRank) {
  const PipelinePlan plan = two_stages();
  const PipelineTimeline t = predicted_timeline(plan);
  const auto trace = chrome_trace(t, "two stages");
  std::map<int, std::string> threads;
  std::map<int, int> sort;
  int sync = 0, step = 0, p2p = 0, exposed_sync = 0;
  double end = -1;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
    if (e.at("ph") == "M" && e.at("name") == "thread_sort_index")
      sort[e.at("tid").get<int>()] = e.at("args").at("sort_index").get<int>();
    if (e.at("ph") == "i" && e.at("name") == "iteration end") end = e.at("ts").get<double>();
    if (e.at("ph") != "X" || e.at("tid").get<int>() < 2) continue;
    const std::string name = e.at("name").get<std::string>();
    sync += name == "gradient sync";
    step += name == "optimizer step";
    p2p += name == "p2p";
    if (name == "gradient sync" && e.at("args").at("exposed").get<bool>()) {
      ++exposed_sync;
      EXPECT_NEAR(e.at("ts").get<double>(), 10.2e6, 1e-3);
    }
  }
  EXPECT_EQ(threads.at(2), "rank 0 communication");
  EXPECT_EQ(threads.at(3), "rank 1 communication");
  EXPECT_EQ(threads.at(0).rfind("stage 0", 0), 0u);
  // Each rank's communication sorts right under its compute.
  EXPECT_LT(sort.at(0), sort.at(2));
  EXPECT_LT(sort.at(2), sort.at(1));
  EXPECT_LT(sort.at(1), sort.at(3));
  EXPECT_EQ(sync, 4);
  EXPECT_EQ(exposed_sync, 2);
  EXPECT_EQ(step, 2);
  EXPECT_EQ(p2p, 8);
  EXPECT_NEAR(end, plan.iteration_time * 1e6, 1e-3);
  EXPECT_NEAR(trace.at("otherData").at("iteration_ms").get<double>(), 10.95e3, 1e-6);
  // A measured timeline without communication: no communication threads.
  PipelineTimeline measured = t;
  measured.comm.clear();
  measured.measured = true;
  for (const auto& e : chrome_trace(measured, "run").at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      EXPECT_EQ(e.at("args").at("name").get<std::string>().find("communication"),
                std::string::npos);
    }
}

TEST(TimelineLanes, JsonCarriesTheLanesAndOldJsonStillLoads) {
  const PipelineTimeline t = predicted_timeline(two_stages());
  nlohmann::json j = timeline_to_json(t);
  const PipelineTimeline back = timeline_from_json(j);
  ASSERT_EQ(back.comm.size(), t.comm.size());
  for (std::size_t i = 0; i < t.comm.size(); ++i) {
    EXPECT_EQ(back.comm[i].rank, t.comm[i].rank);
    EXPECT_EQ(back.comm[i].kind, t.comm[i].kind);
    EXPECT_EQ(back.comm[i].exposed, t.comm[i].exposed);
    EXPECT_NEAR(back.comm[i].start, t.comm[i].start, 1e-12);
    EXPECT_NEAR(back.comm[i].end, t.comm[i].end, 1e-12);
  }
  EXPECT_NEAR(back.end(), 10.95, 1e-12);
  j.erase("comm");  // written before the lanes
  const PipelineTimeline old = timeline_from_json(j);
  EXPECT_TRUE(old.comm.empty());
  EXPECT_NEAR(old.end(), old.makespan, 0);
  nlohmann::json bad = timeline_to_json(t);
  bad["comm"][0]["stage"] = 7;
  EXPECT_THROW(timeline_from_json(bad), InputError);
}

// A real plan (gpt-tiny, two stages over two data-parallel copies): the planner records each
// rank's synchronisation, the plan file keeps it, and the timeline ends at the iteration time.
TEST(TimelineLanes, PlannedTimelineEndsAtTheIterationTime) {
  const MachineSpec machine = load_machine("cpu-local", {0, 4});
  const Graph model = load_model_for_devices("gpt-tiny", 4);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 2;
  o.layout.micro_batches = 4;
  const Plan plan = optimize_plan(model, machine, o);
  ASSERT_TRUE(plan.pipeline);
  const PipelinePlan& p = *plan.pipeline;
  ASSERT_EQ(p.rank_sync_total.size(), 2u);
  ASSERT_EQ(p.rank_sync_exposed.size(), 2u);
  EXPECT_GT(p.rank_sync_total[0], 0);
  EXPECT_DOUBLE_EQ(std::max(p.rank_sync_exposed[0], p.rank_sync_exposed[1]), p.sync_time);
  // Fewer weights than one bucket holds (40M): each rank's are all in its last one.
  ASSERT_EQ(p.rank_last_bucket.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    double weights = 0;
    for (const auto& c : p.chunks)
      if (c.rank == r) weights += c.parameters;
    EXPECT_DOUBLE_EQ(p.rank_last_bucket[static_cast<std::size_t>(r)], weights) << "rank " << r;
  }
  const PipelineTimeline t = predicted_timeline(p);
  EXPECT_NEAR(t.makespan, p.pipeline_time, 1e-9 * p.pipeline_time);
  EXPECT_NEAR(t.end(), p.iteration_time, 1e-9 * p.iteration_time);
  const Plan back = plan_from_json(plan_to_json(plan));
  ASSERT_TRUE(back.pipeline);
  ASSERT_EQ(back.pipeline->rank_sync_total.size(), 2u);
  EXPECT_NEAR(back.pipeline->rank_sync_total[1], p.rank_sync_total[1], 1e-15);
  EXPECT_NEAR(back.pipeline->rank_sync_exposed[0], p.rank_sync_exposed[0], 1e-15);
  EXPECT_EQ(back.pipeline->rank_last_bucket, p.rank_last_bucket);
  // A plan file written before the per-rank figures still loads; its timeline shows the sync.
  nlohmann::json j = plan_to_json(plan);
  ASSERT_TRUE(j.at("pipeline").contains("gradient_sync_per_rank"));
  j["pipeline"].erase("gradient_sync_per_rank");
  const Plan old = plan_from_json(j);
  EXPECT_TRUE(old.pipeline->rank_sync_total.empty());
  EXPECT_NEAR(predicted_timeline(*old.pipeline).end(), p.iteration_time, 1e-9 * p.iteration_time);
}

}  // namespace
}  // namespace unity::timeline_lanes_test
