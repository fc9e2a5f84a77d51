// The 1F1B and interleaved schedules, and the timeline they give.
#include <gtest/gtest.h>

#include <set>

#include "unity/core/errors.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/pipeline/pipeline_schedule.h"

namespace unity {
namespace {

std::string text(const std::vector<PipelineAction>& order) {
  std::string s;
  for (const auto& a : order)
    s += (s.empty() ? "" : " ") + std::string(a.backward ? "B" : "F") +
         std::to_string(a.micro_batch) + (a.chunk ? "c" + std::to_string(a.chunk) : "");
  return s;
}

TEST(PipelineSchedule, OneForwardOneBackwardAfterTheWarmUp) {
  EXPECT_EQ(text(pipeline_schedule(0, 2, 4)), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(text(pipeline_schedule(1, 2, 4)), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(text(pipeline_schedule(0, 4, 2)), "F0 F1 B0 B1");  // warm-up capped at m
  EXPECT_EQ(text(pipeline_schedule(0, 1, 3)), "F0 B0 F1 B1 F2 B2");
}

TEST(PipelineSchedule, InterleavedTakesTheChunksInGroupsOfStages) {
  // Megatron-LM's order for p = 2, v = 2, m = 4 on rank 0: warm-up (2-0-1)x2 + (2-1)x2 = 4.
  EXPECT_EQ(text(pipeline_schedule(0, 2, 4, 2)),
            "F0 F1 F0c1 F1c1 F2 B0c1 F3 B1c1 F2c1 B0 F3c1 B1 B2c1 B3c1 B2 B3");
  for (int r = 0; r < 2; ++r) {
    const auto order = pipeline_schedule(r, 2, 4, 2);
    std::set<std::tuple<bool, int, int>> seen;
    for (const auto& a : order) seen.insert({a.backward, a.chunk, a.micro_batch});
    EXPECT_EQ(seen.size(), 16u);  // every pass of every chunk exactly once
  }
  EXPECT_THROW(pipeline_schedule(0, 2, 3, 2), InputError);
  EXPECT_THROW(pipeline_schedule(0, 1, 4, 2), InputError);
}

TEST(PipelineSchedule, BalancedTimelineMatchesTheClosedForm) {
  // p balanced stages of forward 1 and backward 2: (m + p - 1) x 3, bubble (p - 1) / m.
  for (int p : {2, 4})
    for (int m : {4, 8}) {
      const std::vector<double> f(p, 1.0), b(p, 2.0);
      const PipelineTimeline t = simulate_pipeline(f, b, p, m);
      EXPECT_DOUBLE_EQ(t.makespan, (m + p - 1) * 3.0) << p << " " << m;
      EXPECT_NEAR(t.bubble_fraction, (p - 1.0) / m, 1e-12);
      EXPECT_EQ(t.boxes.size(), static_cast<std::size_t>(2 * p * m));
      EXPECT_DOUBLE_EQ(t.makespan, pipeline_time(std::vector<double>(p, 3.0), m).time);
    }
  // Interleaved: 2 chunks per rank of half the work, bubble (p - 1) / (v m).
  const int p = 4, m = 8, v = 2;
  const std::vector<double> f(p * v, 0.5), b(p * v, 1.0);
  const PipelineTimeline t = simulate_pipeline(f, b, p, m, v);
  EXPECT_NEAR(t.bubble_fraction, (p - 1.0) / (v * m), 1e-12);
  EXPECT_DOUBLE_EQ(t.makespan, pipeline_time(std::vector<double>(p, 3.0), m, v).time);
}

TEST(PipelineSchedule, TheSlowestStageSetsThePace) {
  // Stage 1 takes twice as long: everything after the warm-up waits for it.
  const PipelineTimeline t = simulate_pipeline({1, 2}, {2, 4}, 2, 4);
  EXPECT_DOUBLE_EQ(t.busy(1), 24.0);
  EXPECT_DOUBLE_EQ(t.makespan, 1 + 24 + 2);  // stage 0's first forward and last backward
  EXPECT_NEAR(t.bubble_fraction, 3.0 / 24.0, 1e-12);
}

TEST(PipelineSchedule, StageLabelsNameTheEmbeddingLayersAndHead) {
  PipelinePlan p;
  p.pipeline_stages = 2;
  p.interleave = 2;
  // Chunks in model order over ranks 0, 1, 0, 1: embedding + layer 0, layers 1-2, 3-4, 5 + head.
  const int layers[4][2] = {{0, 0}, {1, 2}, {3, 4}, {5, 5}};
  for (int i = 0; i < 4; ++i) {
    StagePlan c;
    c.rank = i % 2;
    c.first_layer = layers[i][0];
    c.last_layer = layers[i][1];
    p.chunks.push_back(c);
  }
  EXPECT_EQ(stage_labels(p), (std::vector<std::string>{"embedding + layer 0, layers 3-4",
                                                       "layers 1-2, layer 5 + head"}));
  p.chunks[3].first_layer = 3;  // touching ranges merge
  EXPECT_EQ(stage_labels(p)[1], "layers 1-5 + head");
}

TEST(PipelineSchedule, TimelineJsonAndChromeTrace) {
  PipelineTimeline t = simulate_pipeline({1e-3, 1e-3}, {2e-3, 2e-3}, 2, 4);
  t.stage_labels = {"layers 0-0", "layers 1-1"};
  const PipelineTimeline back = timeline_from_json(timeline_to_json(t));
  ASSERT_EQ(back.boxes.size(), t.boxes.size());
  EXPECT_NEAR(back.makespan, t.makespan, 1e-12);
  EXPECT_EQ(back.stage_labels, t.stage_labels);
  const auto trace = chrome_trace(t, "gpt-tiny");
  int complete = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 999.0);  // microseconds
    }
  EXPECT_EQ(complete, 16);
  EXPECT_THROW(timeline_from_json(nlohmann::json{{"stages", 2}}), InputError);
}

}  // namespace
}  // namespace unity
