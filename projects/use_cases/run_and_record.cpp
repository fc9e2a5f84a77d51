#include "unity/use_cases/run_and_record.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "unity/core/cost/op_profile_key.h"
#include "unity/core/json_io.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/executor/backends.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/launcher.h"
#include "unity/executor/pipeline_training.h"
#include "unity/executor/program.h"
#include "unity/executor/reference.h"
#include "unity/executor/run_files.h"

namespace unity::use_cases {
namespace {

using namespace unity::executor;

// A plan file for the workers that is removed again when the run is over.
class TemporaryPlanFile {
 public:
  explicit TemporaryPlanFile(const Plan& plan) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/unity-plan-XXXXXX.json";
    const int fd = mkstemps(pattern.data(), 5);
    if (fd < 0) throw RunError("cannot create a temporary plan file");
    close(fd);
    path_ = pattern;
    write_text_file_atomic(path_, plan_to_json(plan).dump() + "\n");
  }
  ~TemporaryPlanFile() { std::remove(path_.c_str()); }
  TemporaryPlanFile(const TemporaryPlanFile&) = delete;
  TemporaryPlanFile& operator=(const TemporaryPlanFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The most tasks of `view` any one of `ranks` ranks runs (device d runs on rank d mod ranks).
int busiest_rank_tasks(const MachineView& view, int ranks) {
  std::map<int, int> per_rank;
  int most = 0;
  for (int t = 0; t < view.num_tasks(); ++t)
    most = std::max(most, ++per_rank[view.device(t) % std::max(1, ranks)]);
  return std::max(1, most);
}

// How a run trains in this process: the request's iterations, seed, optimizer and callbacks.
TrainingOptions training_options(const Plan& plan, const RunRequest& r) {
  TrainingOptions t;
  t.iterations = r.iterations;
  t.warmup = r.warmup;
  t.seed = r.seed;
  t.optimizer = r.optimizer_for(plan);
  t.learning_rate = r.learning_rate;
  t.collect_weights = r.collect_weights;
  t.profile = r.profile;
  t.on_iteration = r.on_iteration;
  t.monitor = r.monitor;
  return t;
}

}  // namespace

std::string RunRequest::optimizer_for(const Plan& plan) const {
  if (!optimizer.empty()) return optimizer;
  return plan.summary.optimizer.empty() ? "sgd" : plan.summary.optimizer;
}

void require_backend(const std::string& backend) {
  for (const auto& b : available_backends())
    if (b.name == backend) {
      if (!b.available)
        throw InputError(fmt::format("the {} backend is not available: {}", backend, b.detail));
      return;
    }
  throw InputError(fmt::format("unknown backend '{}'", backend));
}

void check_run_request(const Plan& plan, const RunRequest& r) {
  require_backend(r.backend);
  const int devices = std::max(1, plan.summary.devices);
  if (r.ranks < 1 || r.ranks > devices)
    throw InputError(fmt::format(
        "{} ranks: the plan uses {} devices; ranks must be between 1 and the plan's {} devices (a "
        "rank beyond them would have nothing to do)",
        r.ranks, devices, devices));
  if (plan.pipeline && r.ranks != devices)
    throw InputError(fmt::format("a pipelined plan runs one rank per device: {} ranks, got {}",
                                 devices, r.ranks));
  if (r.iterations < 1 || r.warmup < 0)
    throw InputError("a run needs at least one measured iteration");
}

RunResult run_plan(const Plan& plan, const RunRequest& r) {
  check_run_request(plan, r);
  // Bad plans fail here, naming the node, before anything starts.
  Program program;
  if (plan.pipeline)
    check_pipeline_run(plan, r.ranks);
  else
    program = lower_plan(executed_graph(plan.pcg), plan.mapping.views, r.ranks);

  RunResult out;
  if (r.ranks == 1 && r.backend == "cpu" && !r.always_mpirun) {
    auto backend = make_cpu_backend(r.threads);
    auto comm = make_local_communicator();
    const TrainingOptions t = training_options(plan, r);
    out.command = fmt::format("in this process (1 CPU rank, {} BLAS thread{})", r.threads,
                              r.threads == 1 ? "" : "s");
    out.training = plan.pipeline ? train_pipeline(plan, t, *backend, *comm)
                                 : train(program, t, *backend, *comm);
    return out;
  }
  std::optional<TemporaryPlanFile> temporary;
  if (r.plan_file.empty()) temporary.emplace(plan);
  LaunchOptions l;
  l.plan = temporary ? temporary->path() : r.plan_file;
  l.ranks = r.ranks;
  l.backend = r.backend;
  l.iterations = r.iterations;
  l.warmup = r.warmup;
  l.seed = r.seed;
  l.optimizer = r.optimizer_for(plan);
  l.learning_rate = r.learning_rate;
  l.threads = r.threads;
  l.timeout_seconds = r.timeout_seconds;
  l.collect_weights = r.collect_weights;
  l.profile = r.profile;
  l.inject_fault = r.inject_fault;
  l.worker = r.worker;
  l.mpirun = r.mpirun;
  l.mpirun_args = r.mpirun_args;
  l.on_iteration = r.on_iteration;
  LaunchResult launched = launch_run(l);
  out.command = command_text(launched.command);
  out.training = std::move(launched.training);
  return out;
}

ReferenceCheck check_against_one_rank(const Plan& plan, const RunRequest& r,
                                      const TrainingResult& run) {
  const Graph serial = executed_graph(serial_reference(plan.pcg));
  const Program reference = lower_plan(serial, single_device_views(serial), 1);
  auto backend = make_cpu_backend(r.threads);
  auto comm = make_local_communicator();
  RunRequest quiet = r;
  quiet.collect_weights = true;
  quiet.profile = false;
  quiet.on_iteration = nullptr;
  quiet.monitor = nullptr;
  const TrainingResult ref = train(reference, training_options(plan, quiet), *backend, *comm);
  ReferenceCheck c;
  c.reference_losses = ref.losses;
  // A diverged value (infinite, or NaN: a run's file keeps no infinity) matches a diverged one;
  // against a finite value it is an infinite difference, never the NaN that max() would drop.
  auto difference = [](double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b))
      return std::isfinite(a) == std::isfinite(b) ? 0.0 : std::numeric_limits<double>::infinity();
    return std::abs(a - b);
  };
  for (std::size_t i = 0; i < ref.losses.size() && i < run.losses.size(); ++i) {
    const double d = difference(run.losses[i], ref.losses[i]);
    c.losses = std::max(c.losses, d);
    c.relative = std::max(c.relative, d / std::max(std::abs(ref.losses[i]), 1e-12));
  }
  for (const auto& [name, w] : ref.weights) {
    auto it = run.weights.find(name);
    if (it == run.weights.end() || it->second.values.size() != w.values.size())
      throw std::runtime_error(fmt::format("--check: weight '{}' missing from the run", name));
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < w.values.size(); ++i) {
      diff = std::max(diff, difference(it->second.values[i], w.values[i]));
      if (std::isfinite(w.values[i]))
        scale = std::max(scale, static_cast<double>(std::abs(w.values[i])));
    }
    c.weights = std::max(c.weights, diff);
    c.relative = std::max(c.relative, scale > 0 ? diff / scale : diff);
  }
  return c;
}

nlohmann::json run_result_json(const Plan& plan, const RunRequest& r, const RunResult& run) {
  const TrainingResult& t = run.training;
  nlohmann::json j = {
      {"model", plan.summary.model},
      {"mode", plan.summary.mode},
      {"machine", plan.summary.machine},
      {"plan_devices", plan.summary.devices},
      {"backend", r.backend},
      {"ranks", r.ranks},
      {"iterations", r.iterations},
      {"warmup", r.warmup},
      {"optimizer", r.optimizer_for(plan)},
      {"measured_iteration_ms", t.iteration_ms.empty() ? 0.0 : median(t.iteration_ms)},
      {"losses", t.losses},
      {"iteration_ms", t.iteration_ms},
      {"setup_ms", t.setup_ms},
      {"plan_dtype", plan_dtype(plan.pcg)},
      {"compute_dtype", "float32"},
      {"command", run.command}};
  if (t.pipeline) {
    const PipelineMeasurement& pm = *t.pipeline;
    j["bubble_fraction_measured"] = pm.bubble_fraction;
    j["peak_memory_bytes_measured"] = bytes_to_json(pm.peak_memory_bytes);
    j["timeline"] = timeline_to_json(pm.timeline);
  }
  return j;
}

RunRecording::RunRecording(projects::Project& project, const Plan& plan, const RunRequest& r)
    : project_(project), ranks_(r.ranks) {
  const auto existing = project.find_plan(plan);
  plan_id_ = existing ? *existing : project.add_plan(plan);
  run_id_ = project.begin_run(plan_id_, r.backend, r.ranks,
                              {{"iterations", r.iterations},
                               {"warmup", r.warmup},
                               {"threads", r.threads},
                               {"seed", r.seed},
                               {"optimizer", r.optimizer_for(plan)},
                               {"profile", r.profile}});
}

RunRecording::~RunRecording() {
  if (finished_) return;
  try {
    project_.finish_run(run_id_, projects::Status::Failed,
                        {{"error", "the run ended before it reported its result"}});
  } catch (...) {
    // A destructor must not throw; the row reads as interrupted once this process is gone.
  }
}

void RunRecording::add_iterations(const std::vector<projects::RunMetric>& metrics) {
  project_.add_run_metrics(run_id_, metrics);
}

std::size_t RunRecording::keep_profiles(const Plan& plan, const TrainingResult& result) {
  const auto profiles = run_profiles(plan, ranks_, result, fmt::format("run {}", run_id_));
  project_.put_op_profiles(profiles);
  return profiles.size();
}

void RunRecording::finish(projects::Status status, const nlohmann::json& result) {
  finished_ = true;
  project_.finish_run(run_id_, status, result);
}

std::string gradient_allreduce_key(int ranks) {
  return fmt::format("GradientAllReduce(ranks={})", ranks);
}

std::vector<projects::OpProfile> run_profiles(const Plan& plan, int ranks,
                                              const TrainingResult& result,
                                              const std::string& source) {
  std::vector<projects::OpProfile> out;
  if (plan.pipeline) return out;  // a pipeline's stages are measured as a timeline instead
  for (const auto& p : result.profile) {
    if (p.node < 0) {
      if (p.name == "gradient all-reduce" && ranks > 1 && plan.machine.num_devices() > 0)
        out.push_back({plan.machine.device(0).name, gradient_allreduce_key(ranks), 0.0,
                       p.backward_ms * 1e-3, source, ""});
      continue;
    }
    if (!plan.pcg.contains(p.node)) continue;
    const Node& n = plan.pcg.node(p.node);
    if (std::string(to_string(n.op.type)) != p.op) continue;  // not the plan's node
    if (!is_compute_op(n.op.type) && !is_parallel_op(n.op.type)) continue;
    const auto view = plan.mapping.views.find(p.node);
    if (view == plan.mapping.views.end() || view->second.num_tasks() == 0) continue;
    const double tasks = busiest_rank_tasks(view->second, ranks);
    out.push_back({plan.machine.device(view->second.device(0)).name,
                   op_profile_key(plan.pcg, p.node), p.forward_ms * 1e-3 / tasks,
                   p.backward_ms * 1e-3 / tasks, source, ""});
  }
  return out;
}

}  // namespace unity::use_cases
