// What recording a search into a project costs (issue 7: at most 5% of the search time): a
// resnext50 joint search on one Summit node (6 V100s), run alternately without recording and with
// a SearchRecorder writing every event, median of N runs each. Prints a table; asserts nothing.
//   unity_bench_project_recording [runs=5] [model=resnext50]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/core/plan/plan_optimizer.h"
#include "unity/projects/project.h"
#include "unity/projects/search_recorder.h"

using namespace unity;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of this process (every thread) or of the calling thread: unlike wall time, it hardly
// moves when other programs load the machine.
double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Counts the events and the time the search thread spends handing them to the recorder.
struct TimedObserver : SearchObserver {
  SearchObserver* inner = nullptr;
  std::int64_t events = 0;
  double seconds = 0;
  void on_event(const SearchEvent& e) override {
    ++events;
    if (!inner) return;
    const auto t0 = Clock::now();
    inner->on_event(e);
    seconds += seconds_since(t0);
  }
};

struct Variant {
  std::string name;
  bool record = false;
  projects::RecorderOptions recorder;
  std::vector<double> search_s;  // optimize_plan with the recorder attached, through finish()
  std::vector<double> total_s;   // plus what `optimize --project` adds: model, machine, plan rows
  std::vector<double> handoff_s;
  std::vector<double> process_cpu_s;  // every thread, the recorder's writer included
  std::vector<double> thread_cpu_s;   // the search's thread only
  std::int64_t events = 0;
  std::int64_t steps = 0;
  std::uintmax_t file_bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string model_name = argc > 2 ? argv[2] : "resnext50";
  const MachineSpec machine = load_machine("summit", {1, 0});
  const Graph model = load_model_for_devices(model_name, machine.num_devices());
  OptimizeOptions options;
  options.mode = "joint";

  std::vector<Variant> variants(3);
  variants[0].name = "not recorded";
  variants[1].name = "recorded (batches of 512 events / 250 ms)";
  variants[1].record = true;
  variants[2].name = "recorded, one transaction per event";
  variants[2].record = true;
  variants[2].recorder.batch_events = 1;

  const fs::path dir =
      fs::temp_directory_path() / fmt::format("unity_bench_recording_{}", ::getpid());
  fs::create_directories(dir);
  fmt::print("{} joint search on summit, 1 node ({} GPUs): {} runs of each variant, interleaved\n",
             model_name, machine.num_devices(), runs);
  for (int run = 0; run < runs; ++run) {
    // Alternate the order every round, so a machine that gets busier or quieter during the
    // benchmark (other builds on a shared box) weighs on every variant alike.
    std::vector<Variant*> order;
    for (auto& v : variants) order.push_back(&v);
    if (run % 2) std::reverse(order.begin(), order.end());
    for (Variant* vp : order) {
      Variant& v = *vp;
      TimedObserver observer;
      OptimizeOptions o = options;
      o.observer = &observer;
      double process0 = 0, thread0 = 0;
      if (!v.record) {
        const auto t0 = Clock::now();
        process0 = cpu_seconds(RUSAGE_SELF);
        thread0 = cpu_seconds(RUSAGE_THREAD);
        optimize_plan(model, machine, o);
        v.thread_cpu_s.push_back(cpu_seconds(RUSAGE_THREAD) - thread0);
        v.process_cpu_s.push_back(cpu_seconds(RUSAGE_SELF) - process0);
        v.search_s.push_back(seconds_since(t0));
        v.total_s.push_back(v.search_s.back());
      } else {
        const fs::path file = dir / fmt::format("run{}_{}.unity", run, &v - variants.data());
        auto project = projects::Project::create(file);
        const auto t_total = Clock::now();
        projects::SearchInfo info;
        info.model_id = project.add_model(model, model_name);
        info.machine_id = project.add_machine(machine);
        info.devices = machine.num_devices();
        info.mode = o.mode;
        const auto t_search = Clock::now();
        process0 = cpu_seconds(RUSAGE_SELF);
        thread0 = cpu_seconds(RUSAGE_THREAD);
        projects::SearchRecorder recorder(project, info, v.recorder);
        observer.inner = &recorder;
        const Plan plan = optimize_plan(model, machine, o);
        recorder.finish({plan.summary.search_seconds, plan.summary.iteration_time_ms,
                         plan.summary.candidates_evaluated});
        v.thread_cpu_s.push_back(cpu_seconds(RUSAGE_THREAD) - thread0);
        v.process_cpu_s.push_back(cpu_seconds(RUSAGE_SELF) - process0);  // writer thread joined
        v.search_s.push_back(seconds_since(t_search));
        project.add_plan(plan, recorder.search_id());
        v.total_s.push_back(seconds_since(t_total));
        v.steps = project.count_search_steps(recorder.search_id());
        v.file_bytes = fs::file_size(file);
      }
      v.events = observer.events;
      v.handoff_s.push_back(observer.seconds);
    }
  }
  fs::remove_all(dir);

  const double base = median(variants[0].search_s);
  const double base_min =
      *std::min_element(variants[0].search_s.begin(), variants[0].search_s.end());
  const double base_cpu = median(variants[0].process_cpu_s);
  const double base_thread = median(variants[0].thread_cpu_s);
  auto pct = [](double x, double b) { return fmt::format("{:+.1f}%", 100.0 * (x - b) / b); };
  fmt::print("\n{:<42} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7} {:>9} {:>6} {:>6} {:>5}\n",
             "variant", "wall s", "", "min s", "", "cpu s", "", "thr cpu", "", "handoff ms",
             "events", "steps", "KiB");
  for (const auto& v : variants) {
    const double s = median(v.search_s);
    const double m = *std::min_element(v.search_s.begin(), v.search_s.end());
    const double c = median(v.process_cpu_s);
    const double t = median(v.thread_cpu_s);
    fmt::print(
        "{:<42} {:>8.3f} {:>7} {:>8.3f} {:>7} {:>8.3f} {:>7} {:>8.3f} {:>7} {:>9.2f} {:>6} {:>6} "
        "{:>5}\n",
        v.name, s, pct(s, base), m, pct(m, base_min), c, pct(c, base_cpu), t, pct(t, base_thread),
        1e3 * median(v.handoff_s), v.events, v.record ? std::to_string(v.steps) : "-",
        v.record ? std::to_string(v.file_bytes / 1024) : "-");
  }
  fmt::print(
      "\nwall s: median wall time of the search (recorded: from creating the recorder to finish(), "
      "which commits the last batch); min s: the fastest run\n"
      "cpu s: median CPU time of every thread over the same span (the writer thread included); "
      "thr cpu: the search thread's alone\n"
      "handoff ms: time the search thread spent in on_event; KiB: the project file afterwards\n"
      "storing the model, machine and plan rows as `optimize --project` does adds {:.0f} ms "
      "(median)\n",
      1e3 * [&] {
        std::vector<double> rows;
        for (std::size_t i = 0; i < variants[1].total_s.size(); ++i)
          rows.push_back(variants[1].total_s[i] - variants[1].search_s[i]);
        return median(rows);
      }());
  return 0;
}
