// unity-worker: one rank of a training run, one process per device. `unity run` starts it through
// mpirun and reads its events and result files; users start it themselves under their own mpirun or
// srun for multi-node runs:
//   mpirun -np 8 --hostfile hosts unity-worker plan.json --iterations 20 --json
// Exit codes: 0 success, 1 bad input or a failed run (message on stderr), 2 internal error, 3 a
// rank made no progress within --timeout.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "unity/core/json_io.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/backends.h"
#include "unity/executor/blas_core.h"
#include "unity/executor/calibration.h"
#include "unity/executor/communicator.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/pipeline_training.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"
#include "worker_backend.h"
#include "worker_monitor.h"

using namespace unity;
using namespace unity::executor;

namespace {

struct Options {
  std::string plan;
  std::string backend = "cpu";
  int iterations = 10;
  int warmup = 0;
  std::uint64_t seed = 1;
  std::string optimizer;  // empty: the plan's
  double learning_rate = 0;
  int threads = 1;
  double timeout = 60;
  bool events = false;
  bool json = false;
  bool explain = false;
  std::string result;
  std::string weights;
  std::string fault;  // KIND@RANK:ITERATION, KIND = die, hang or error
  bool calibrate = false;
  bool profile = false;
  double calibration_seconds = 0.25;
  bool calibration_quick = false;
};

struct Fault {
  std::string kind;
  int rank = -1;
  int iteration = -1;
};

Fault parse_fault(const std::string& spec) {
  Fault f;
  if (spec.empty()) return f;
  const auto at = spec.find('@'), colon = spec.find(':');
  if (at == std::string::npos || colon == std::string::npos || colon < at)
    throw InputError(fmt::format("--inject-fault '{}': expected KIND@RANK:ITERATION", spec));
  f.kind = spec.substr(0, at);
  f.rank = std::stoi(spec.substr(at + 1, colon - at - 1));
  f.iteration = std::stoi(spec.substr(colon + 1));
  if (f.kind != "die" && f.kind != "hang" && f.kind != "error")
    throw InputError(fmt::format("--inject-fault '{}': KIND is die, hang or error", spec));
  return f;
}

void report_error(int rank, const std::string& message, bool events) {
  if (events) worker::emit_event({{"event", "error"}, {"rank", rank}, {"message", message}});
  std::fprintf(stderr, "unity-worker rank %d: error: %s\n", rank, message.c_str());
  std::fflush(stderr);
}

// `unity calibrate`: every rank measures at once; rank 0 writes the result.
int run_calibration(const Options& o, MpiSession& mpi) {
  const int rank = mpi.rank();
  worker::Watchdog dog(rank, o.timeout, [](NodeId) { return std::string(); });
  try {
    auto device = worker::make_worker_device(o.backend, o.threads);
    auto comm = worker::monitored(worker::make_worker_communicator(o.backend, *device), dog);
    if (rank == 0 && o.events)
      worker::emit_event({{"event", "started"}, {"ranks", mpi.size()}, {"backend", o.backend}});
    CalibrationOptions c;
    c.seconds = o.calibration_seconds;
    c.quick = o.calibration_quick;
    const Calibration result = calibrate(*device, *comm, c);
    if (rank == 0) {
      const nlohmann::json j = {{"calibration", calibration_to_json(result)}};
      if (!o.result.empty()) write_text_file_atomic(o.result, j.dump(2) + "\n");
      if (o.json) std::printf("%s\n", j.dump(2).c_str());
      if (o.events) worker::emit_event({{"event", "finished"}});
    }
    return 0;
  } catch (const std::exception& e) {
    report_error(rank, e.what(), o.events);
    MpiSession::abort(1);
  }
}

int run(const Options& o, MpiSession& mpi) {
  if (o.calibrate) return run_calibration(o, mpi);
  const int rank = mpi.rank(), size = mpi.size();
  // Everything up to the lowering is identical on every rank: a bad plan fails everywhere the same
  // way, so the ranks can stop without tearing each other down.
  Plan plan;
  Program program;
  Fault fault;
  try {
    fault = parse_fault(o.fault);
    plan = plan_from_json(read_json_file(o.plan));
    if (size > plan.summary.devices && plan.summary.devices > 0)
      throw InputError(fmt::format(
          "the plan uses {} devices but the run has {} ranks: a rank would have nothing to do",
          plan.summary.devices, size));
    if (plan.pipeline)
      check_pipeline_run(plan, size);
    else
      program = lower_plan(executed_graph(plan.pcg), plan.mapping.views, size);
  } catch (const InputError& e) {
    if (rank == 0) report_error(rank, e.what(), o.events);
    return 1;
  }
  if (o.explain && plan.pipeline) {
    if (rank == 0)
      std::printf("a pipelined plan: %d stages x %d copies, %d micro-batches\n",
                  plan.pipeline->pipeline_stages, plan.pipeline->data_parallel,
                  plan.pipeline->micro_batches);
    return 0;
  }
  if (o.explain) {
    for (int r = 0; r < size; ++r) {
      if (r == rank) std::fputs(describe_rank(program, r).c_str(), stdout);
      std::fflush(stdout);
      auto comm = make_mpi_communicator();
      comm->barrier();
    }
    return 0;
  }

  worker::Watchdog dog(rank, o.timeout, [&](NodeId id) {
    if (plan.pipeline) {
      const PipelinePosition p = pipeline_position(*plan.pipeline, rank);
      return fmt::format("pipeline stage {} (copy {})", p.stage, p.copy);
    }
    return program.graph.contains(id) ? program.graph.describe(id) : "";
  });
  try {
    auto device = worker::make_worker_device(o.backend, o.threads);
    auto comm = worker::monitored(worker::make_worker_communicator(o.backend, *device), dog);
    TrainingOptions t;
    t.iterations = o.iterations;
    t.warmup = o.warmup;
    t.seed = o.seed;
    t.optimizer = o.optimizer.empty() ? plan.summary.optimizer : o.optimizer;
    t.learning_rate = o.learning_rate;
    t.collect_weights = !o.weights.empty();
    t.profile = o.profile;
    t.monitor = &dog;
    t.before_phase = [&](int iteration, ProgressMonitor::Phase phase) {
      if (rank != fault.rank || iteration != fault.iteration ||
          phase != ProgressMonitor::Phase::Backward)
        return;
      if (fault.kind == "die") raise(SIGKILL);
      if (fault.kind == "error")
        throw std::runtime_error(fmt::format("injected error at iteration {}", iteration + 1));
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));  // hang
    };
    t.on_iteration = [&](const IterationReport& r) {
      if (rank != 0) return;
      if (o.events)
        worker::emit_event({{"event", "iteration"},
                            {"index", r.index},
                            {"warmup", r.warmup},
                            {"loss", r.loss},
                            {"ms", r.milliseconds}});
      else
        std::fprintf(stderr, "%s %d/%d  loss %.6f  %.3f ms\n", r.warmup ? "warm-up  " : "iteration",
                     r.warmup ? r.index + 1 : r.index - o.warmup + 1,
                     r.warmup ? o.warmup : o.iterations, r.loss, r.milliseconds);
    };
    if (rank == 0 && o.events) {
      nlohmann::json started = {{"event", "started"}, {"ranks", size}, {"backend", o.backend}};
      if (plan.pipeline) {
        // The launcher names the stage of a rank that fails.
        std::vector<int> stages;
        for (int r = 0; r < size; ++r) stages.push_back(pipeline_position(*plan.pipeline, r).stage);
        started["pipeline_stages_of_ranks"] = stages;
      }
      worker::emit_event(started);
    }
    const TrainingResult result =
        plan.pipeline ? train_pipeline(plan, t, *device, *comm) : train(program, t, *device, *comm);
    if (rank == 0) {
      nlohmann::json extra = {{"backend", o.backend},
                              {"ranks", size},
                              {"iterations", o.iterations},
                              {"warmup", o.warmup},
                              {"measured_iteration_ms", median(result.iteration_ms)}};
      if (o.backend == "cpu") extra["blas_core"] = openblas_core();
      if (!o.result.empty()) write_run_result(o.result, result, extra, o.weights);
      if (o.json) {
        extra["losses"] = result.losses;
        extra["iteration_ms"] = result.iteration_ms;
        extra["setup_ms"] = result.setup_ms;
        std::printf("%s\n", extra.dump(2).c_str());
      }
      if (o.events) worker::emit_event({{"event", "finished"}});
    }
    return 0;
  } catch (const std::exception& e) {
    // Other ranks may be waiting for this one: end the whole job.
    report_error(rank, e.what(), o.events);
    MpiSession::abort(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "unity-worker: one rank of a Unity training run (started by `unity run`, mpirun or srun)",
      "unity-worker"};
  app.add_option("plan", o.plan, "Plan file written by `unity optimize --out`");
  app.add_flag("--calibrate", o.calibrate,
               "Measure this machine for the cost model instead of training");
  app.add_option("--calibration-seconds", o.calibration_seconds,
                 "Seconds per calibration measurement")
      ->check(CLI::PositiveNumber);
  app.add_flag("--calibration-quick", o.calibration_quick,
               "The quick probe: fewer GEMM shapes and all-reduce sizes, no rank alone");
  app.add_option("--backend", o.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--iterations", o.iterations, "Measured training iterations")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "Iterations before the measured ones")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of the synthetic data and initial weights");
  app.add_option("--optimizer", o.optimizer, "sgd, sgd-momentum or adam (default: the plan's)")
      ->check(CLI::IsMember({"sgd", "sgd-momentum", "adam"}));
  app.add_option("--lr", o.learning_rate, "Learning rate (default: 0.01 for SGD, 0.001 for Adam)");
  app.add_option("--threads", o.threads, "BLAS threads per rank (a cpu-local rank is one core)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", o.timeout,
                 "Seconds without progress before a rank gives up (0: never)");
  app.add_flag("--events", o.events, "Print machine-readable events for the launcher");
  app.add_flag("--json", o.json, "Rank 0 prints the result as JSON on stdout");
  app.add_flag("--explain", o.explain, "Print what each rank does and exit");
  app.add_flag("--profile", o.profile, "Time every operator (the result file lists them)");
  app.add_option("--result", o.result, "Rank 0 writes the result JSON here");
  app.add_option("--weights", o.weights, "Rank 0 writes the final weights here (binary)");
  app.add_option("--inject-fault", o.fault,
                 "Testing: KIND@RANK:ITERATION with KIND die, hang or error")
      ->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  if (o.plan.empty() && !o.calibrate) {
    std::fprintf(stderr, "unity-worker: a plan file is needed (or --calibrate)\n");
    return 1;
  }
  MpiSession mpi(&argc, &argv);
  try {
    return run(o, mpi);
  } catch (const InputError& e) {
    report_error(mpi.rank(), e.what(), o.events);
    MpiSession::abort(1);
  } catch (const std::exception& e) {
    report_error(mpi.rank(), std::string("internal error: ") + e.what(), o.events);
    MpiSession::abort(2);
  }
}
