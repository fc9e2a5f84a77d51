// Test helper: records synthetic search events (synthetic_events.h) into a project, one every
// `interval_us` microseconds, until it has reported `count` of them (0: forever) or is killed.
// Prints the search id on stdout as soon as the search row exists, then "committed N" after each
// flush it makes every `flush_every` events.
//   unity_project_test_writer FILE [count] [interval_us] [flush_every]
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "synthetic_events.h"
#include "unity/projects/project.h"
#include "unity/projects/search_recorder.h"

int main(int argc, char** argv) {
  using namespace unity::projects;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [count] [interval_us] [flush_every]\n", argv[0]);
    return 1;
  }
  const std::int64_t count = argc > 2 ? std::stoll(argv[2]) : 0;
  const std::int64_t interval_us = argc > 3 ? std::stoll(argv[3]) : 200;
  const std::int64_t flush_every = argc > 4 ? std::stoll(argv[4]) : 0;
  try {
    auto project = Project::open_or_create(argv[1]);
    SearchInfo info;
    info.devices = 6;
    info.mode = "joint";
    info.config = {{"writer", "synthetic"}};
    RecorderOptions options;
    options.batch_events = 64;
    options.batch_interval = std::chrono::milliseconds(20);
    SearchRecorder recorder(project, info, options);
    std::printf("%lld\n", static_cast<long long>(recorder.search_id()));
    std::fflush(stdout);
    for (std::int64_t seq = 0; count == 0 || seq < count; ++seq) {
      recorder.on_event(testing::synthetic_event(seq));
      if (flush_every > 0 && (seq + 1) % flush_every == 0) {
        recorder.flush();
        std::printf("committed %lld\n", static_cast<long long>(recorder.committed_events()));
        std::fflush(stdout);
      }
      if (interval_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(interval_us));
    }
    recorder.finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unity_project_test_writer: %s\n", e.what());
    return 2;
  }
  return 0;
}
