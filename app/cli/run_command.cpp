// `unity run TARGET [--backend cpu|cuda] [--ranks N] [--iterations K] [--warmup W] [--check]
// [--json]` TARGET is a plan file (from `unity optimize --out`) or a MODEL, which is planned first
// with --mode on --machine (cpu-local by default) for --ranks devices; --scale and --batch shrink
// zoo models for CPU runs. One CPU rank runs in this process; more ranks (or the CUDA backend)
// start `mpirun -np N unity-worker ...`. Progress goes to stderr, the result to stdout.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "machine_options.h"
#include "project_option.h"
#include "search_options.h"
#include "unity/core/json_io.h"
#include "unity/core/mapping/sp_decomposition.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/plan/search_mode.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "unity/executor/backends.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/launcher.h"
#include "unity/executor/op_profiles.h"
#include "unity/executor/pipeline_training.h"
#include "unity/executor/reference.h"
#include "unity/executor/run_files.h"
#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/operator_times.h"
#include "unity/use_cases/optimize_and_record.h"
#include "unity/use_cases/run_and_record.h"
#include "unity/use_cases/run_model.h"

namespace unity::cli {
namespace {

// The first iteration whose loss is infinite or NaN, if any.
std::optional<std::size_t> first_not_finite(const std::vector<double>& losses) {
  for (std::size_t i = 0; i < losses.size(); ++i)
    if (!std::isfinite(losses[i])) return i;
  return std::nullopt;
}

using namespace unity::executor;

struct RunOptions {
  std::string target;
  std::string backend = "cpu";
  int ranks = 0;
  int iterations = 10;
  int warmup = 0;
  bool check = false;
  bool json = false;
  std::uint64_t seed = 1;
  std::string optimizer;
  double learning_rate = 0;
  int threads = 1;
  double timeout = 60;
  std::int64_t batch = 0;
  zoo::TransformerResize resize;  // --layers ... --ffn --kv-heads --head-dim
  double scale = 1.0;
  std::string mode = "data-parallel";
  std::string machine;  // a MODEL's machine (default cpu-local); a plan's re-costing machine
  std::string mpirun;
  std::vector<std::string> mpirun_args;
  bool use_mpirun = false;
  bool profile = false;
  std::string fault;
  std::string save_plan;
  std::string profiles;                                   // operator profiles for the prediction
  std::vector<std::pair<std::string, bool>> model_flags;  // given on the command line?
  LayoutOptions layout;                                   // --tp --pp --micro-batches ...
  std::string loss;                                       // --loss (a model without one)
  std::string trace;                                      // --trace FILE
  std::string project;                                    // --project FILE
};

bool is_plan_file(const std::string& path) {
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json" || access(path.c_str(), R_OK) != 0)
    return false;
  return is_plan_json(read_json_file(path));
}

// Measured operator profiles: `file`, else a calibrated machine file's (unity calibrate keeps them
// beside it); null when there are none. Lookups measure the operators they lack; the caller saves
// them back to the returned path.
std::pair<std::shared_ptr<MeasuredProfiles>, std::filesystem::path> measured_profiles(
    const std::string& machine_spec, const std::string& file) {
  std::filesystem::path path = file;
  if (path.empty() && machine_spec.size() > 5 &&
      machine_spec.substr(machine_spec.size() - 5) == ".json" &&
      std::filesystem::exists(profiles_path_for(machine_spec)))
    path = profiles_path_for(machine_spec);
  if (path.empty()) return {nullptr, path};
  return {MeasuredProfiles::load(path), path};
}

// Plans a MODEL target like `unity optimize` would, with --scale/--batch applied to zoo models,
// and with the project's pins, vetoes, measured operator times and calibrated machine when one is
// given.
Plan plan_model(const RunOptions& o, int ranks, projects::Project* project) {
  use_cases::RunModel request;
  request.target = o.target;
  request.devices = ranks;
  request.batch = o.batch;
  request.scale = o.scale;
  request.resize = o.resize;
  request.loss = o.loss;
  std::string loss_note;
  Graph model = use_cases::build_run_model(request, &loss_note);
  if (!loss_note.empty()) fmt::print(stderr, "note: {}\n", loss_note);
  const MachineSpec machine =
      use_cases::machine_for(project, o.machine.empty() ? "cpu-local" : o.machine, {0, ranks});
  OptimizeOptions opt;
  const auto [profiles, profiles_file] = measured_profiles(o.machine, o.profiles);
  opt.profiles = profiles;
  opt.mode = o.mode;
  // A pipeline layout when one is asked for, with stage replicas of one device unless --tp says
  // otherwise (CPU ranks gain nothing from tensor parallelism); otherwise the plan the mode makes
  // without pipelines.
  opt.layout = o.layout.layout();
  opt.pipelines = !opt.layout.empty();
  if (opt.pipelines && opt.layout.tensor_parallel == 0) opt.layout.tensor_parallel = 1;
  if (!o.optimizer.empty()) opt.optimizer = o.optimizer;
  if (project) {
    const std::int64_t model_id = project->add_model(model, o.target);
    use_cases::apply_project_choices(*project, model_id, opt);  // its profiles replace a file's
  }
  Plan plan = optimize_plan(model, machine, opt);
  if (profiles && profiles->measured_now() > 0) profiles->save(profiles_file);
  return plan;
}

// The plan's mapping costed on another machine with the same number of devices (cpu-local: this
// computer's figures, as plans get them), with measured operator profiles where there are some
// (measuring the operators they lack, then keeping them).
double recost(const Plan& plan, const std::string& machine_spec, const std::string& profiles_file) {
  const MachineSpec m = use_cases::machine_for(nullptr, machine_spec, {0, plan.summary.devices});
  const auto [profiles, file] = measured_profiles(machine_spec, profiles_file);
  const double ms =
      predicted_iteration_ms(plan.pcg, plan.mapping.views, m, plan.summary.optimizer, profiles);
  if (profiles && profiles->measured_now() > 0) profiles->save(file);
  return ms;
}

void print_progress(const IterationReport& r, int warmup, int iterations) {
  std::fprintf(stderr, "%s %3d/%d  loss %.6f  %9.3f ms\n", r.warmup ? "warm-up  " : "iteration",
               r.warmup ? r.index + 1 : r.index - warmup + 1, r.warmup ? warmup : iterations,
               r.loss, r.milliseconds);
  std::fflush(stderr);
}

// The run's settings from the command line.
use_cases::RunRequest run_request(const RunOptions& o, int ranks, bool weights) {
  use_cases::RunRequest r;
  r.backend = o.backend;
  r.ranks = ranks;
  r.iterations = o.iterations;
  r.warmup = o.warmup;
  r.seed = o.seed;
  r.optimizer = o.optimizer;
  r.learning_rate = o.learning_rate;
  r.threads = o.threads;
  r.timeout_seconds = o.timeout;
  r.collect_weights = weights;
  r.profile = o.profile;
  r.always_mpirun = o.use_mpirun;
  r.mpirun = o.mpirun;
  r.mpirun_args = o.mpirun_args;
  r.inject_fault = o.fault;
  return r;
}

// A pipelined run's measurements beside the plan's predictions.
nlohmann::json pipeline_rows(const Plan& plan, const PipelineMeasurement& m) {
  const PipelinePlan& p = *plan.pipeline;
  const PipelineTimeline predicted = predicted_timeline(p);
  nlohmann::json j = pipeline_measurement_to_json(m);
  for (auto& s : j["stages"]) {
    const int stage = s.at("stage").get<int>();
    double f = 0, b = 0;
    for (const auto& c : p.chunks)
      if (c.rank == stage) {
        f += c.forward * p.micro_batches * 1e3;
        b += c.backward * p.micro_batches * 1e3;
      }
    s["forward_ms_predicted"] = f;
    s["backward_ms_predicted"] = b;
    s["idle_ms_predicted"] = (predicted.makespan - predicted.busy(stage)) * 1e3;
    if (stage < static_cast<int>(predicted.stage_labels.size()))
      s["layers"] = predicted.stage_labels[stage];
  }
  j["bubble_fraction_predicted"] = p.bubble_fraction;
  j["expert_parallel"] = p.expert_parallel;
  j["alltoall_bytes_predicted"] = p.alltoall_bytes;
  j["token_dispatcher"] = std::string(to_string(p.token_dispatcher));
  nlohmann::json peak = nlohmann::json::array();
  for (const auto& r : p.rank_memory) peak.push_back(bytes_to_json(r.total()));
  j["peak_memory_bytes_predicted"] = peak;  // per pipeline rank (each of its devices)
  j["timeline_predicted"] = timeline_to_json(predicted);
  return j;
}

void print_run_pipeline(const nlohmann::json& j) {
  fmt::print(
      "  pipeline    bubble {:.3f} measured, {:.3f} predicted; ran in {} ({} plan), "
      "recompute {}, ZeRO {}\n",
      j["bubble_fraction_measured"].get<double>(), j["bubble_fraction_predicted"].get<double>(),
      j["compute_dtype"].get<std::string>(), j["plan_dtype"].get<std::string>(),
      j["recompute"].get<std::string>(), j["zero_stage"].get<int>());
  if (const double sent = j.value("expert_exchange_bytes_measured", 0.0); sent > 0)
    fmt::print(
        "  experts     ep {}: each device ran its share of the experts on the tokens of its "
        "data-parallel copies, gathered and summed back (the all-gather dispatcher): {} sent an "
        "iteration by the busiest rank; the plan's {} dispatch sends {} from every device "
        "together\n",
        j["expert_parallel"].get<int>(), human_bytes(static_cast<std::int64_t>(sent)),
        j["token_dispatcher"].get<std::string>(),
        human_bytes(static_cast<std::int64_t>(j["alltoall_bytes_predicted"].get<double>())));
  fmt::print("  {:<7} {:<16} {:>19} {:>19} {:>19}\n", "stage", "layers", "forward ms (pred)",
             "backward ms (pred)", "idle ms (pred)");
  for (const auto& s : j["stages"])
    fmt::print("  {:<7} {:<16} {:>9.3f} ({:>7.3f}) {:>9.3f} ({:>7.3f}) {:>9.3f} ({:>7.3f})\n",
               s["stage"].get<int>(), s.value("layers", std::string()),
               s["forward_ms"].get<double>(), s["forward_ms_predicted"].get<double>(),
               s["backward_ms"].get<double>(), s["backward_ms_predicted"].get<double>(),
               s["idle_ms"].get<double>(), s["idle_ms_predicted"].get<double>());
}

// Each operator's measured times beside the plan's prediction for it (its own and incoming edges'
// computation and communication, forward and backward).
nlohmann::json profile_rows(const Plan& plan, const TrainingResult& result) {
  const use_cases::OperatorPredictions predicted(plan);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : result.profile) {
    nlohmann::json row = {{"node", p.node},
                          {"name", p.name},
                          {"op", p.op},
                          {"forward_ms", p.forward_ms},
                          {"backward_ms", p.backward_ms}};
    if (const auto ms = predicted.of(p)) row["predicted_ms"] = *ms;
    rows.push_back(row);
  }
  return rows;
}

void print_profile(const nlohmann::json& rows) {
  fmt::print("  {:<28} {:<20} {:>9} {:>9} {:>9} {:>10}\n", "operator", "type", "fwd ms", "bwd ms",
             "total", "predicted");
  for (const auto& r : rows) {
    const double fwd = r["forward_ms"].get<double>(), bwd = r["backward_ms"].get<double>();
    fmt::print(
        "  {:<28} {:<20} {:>9.3f} {:>9.3f} {:>9.3f} {:>10}\n", r["name"].get<std::string>(),
        r["op"].get<std::string>(), fwd, bwd, fwd + bwd,
        r.contains("predicted_ms") ? fmt::format("{:.3f}", r["predicted_ms"].get<double>()) : "");
  }
}

void run(const RunOptions& o) {
  // Before anything is planned, written or recorded.
  use_cases::require_backend(o.backend);
  std::optional<projects::Project> project;
  if (!o.project.empty()) project.emplace(projects::Project::open_or_create(o.project));
  Plan plan;
  std::string plan_file;
  const bool target_is_plan = is_plan_file(o.target);
  if (target_is_plan) {
    for (const auto& [flag, given] : o.model_flags)
      if (given)
        throw InputError(fmt::format("{} applies to a MODEL; '{}' is a plan", flag, o.target));
    plan = plan_from_json(read_json_file(o.target));
    plan_file = o.target;
  } else {
    plan = plan_model(o, o.ranks > 0 ? o.ranks : 1, project ? &*project : nullptr);
  }

  const int ranks = o.ranks > 0 ? o.ranks : std::max(1, plan.summary.devices);
  double predicted = plan.summary.iteration_time_ms;
  if (!o.machine.empty() && target_is_plan) {
    if (plan.pipeline)
      throw InputError(
          "--machine: a pipelined plan is not re-costed on another machine; plan the model on "
          "that machine (unity run MODEL --machine FILE ...) instead");
    predicted = recost(plan, o.machine, o.profiles);
  }
  if (!o.trace.empty() && !plan.pipeline)
    throw InputError("--trace: the plan is not pipelined, so it has no pipeline timeline");

  use_cases::RunRequest request = run_request(o, ranks, o.check);
  use_cases::check_run_request(plan, request);
  if (!target_is_plan && !o.save_plan.empty()) {
    write_text_file_atomic(o.save_plan, plan_to_json(plan).dump(1) + "\n");
    plan_file = o.save_plan;
  }
  request.plan_file = plan_file;
  // --project: the run's row and its iterations as they finish; a profiled run's measured
  // operator times become the project's operator profiles (the next plan is costed with them).
  std::optional<use_cases::RunRecording> recording;
  if (project) recording.emplace(*project, plan, request);
  request.on_iteration = [&](const IterationReport& r) {
    print_progress(r, o.warmup, o.iterations);
    if (recording) recording->add_iterations({{r.index, r.milliseconds, r.loss}});
  };
  use_cases::RunResult run;
  try {
    run = use_cases::run_plan(plan, request);
  } catch (const std::exception& e) {
    if (recording) recording->finish(projects::Status::Failed, {{"error", e.what()}});
    throw;
  }
  const TrainingResult& result = run.training;
  const std::string optimizer = request.optimizer_for(plan);

  nlohmann::json j = use_cases::run_result_json(plan, request, run);
  j.erase("command");
  j.erase("timeline");  // a pipelined run's measured timeline is under "pipeline"
  j["predicted_iteration_ms"] = predicted;
  use_cases::ReferenceCheck check;
  if (o.check) {
    check = use_cases::check_against_one_rank(plan, request, result);
    j["max_abs_diff"] = std::max(check.losses, check.weights);
    j["max_abs_diff_losses"] = check.losses;
    j["max_abs_diff_weights"] = check.weights;
    j["max_rel_diff"] = check.relative;
    j["reference_losses"] = check.reference_losses;
  }
  if (o.profile) j["profile"] = profile_rows(plan, result);
  if (result.pipeline) {
    j["pipeline"] = pipeline_rows(plan, *result.pipeline);
    for (const char* key : {"stages", "bubble_fraction_measured", "bubble_fraction_predicted",
                            "peak_memory_bytes_measured", "peak_memory_bytes_predicted",
                            "compute_dtype", "plan_dtype", "recompute", "zero_stage"})
      j[key] = j["pipeline"][key];
    if (!o.trace.empty())
      write_text_file_atomic(
          o.trace,
          chrome_trace(result.pipeline->timeline, plan.summary.model + " (measured)").dump() +
              "\n");
  }
  if (recording) {
    std::size_t profiles = 0;
    if (o.profile) profiles = recording->keep_profiles(plan, result);
    j["project"] = {{"file", project->file().string()},
                    {"run_id", recording->run_id()},
                    {"plan_id", recording->plan_id()},
                    {"op_profiles", profiles}};
    recording->finish(projects::Status::Completed, j);
  }
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} ({}) on {} {} rank{}, {} iterations\n", plan.summary.model, plan.summary.mode,
               ranks, o.backend, ranks == 1 ? "" : "s", o.iterations);
    fmt::print("  iteration   {:.3f} ms measured (median), {:.3f} ms predicted\n",
               median(result.iteration_ms), predicted);
    fmt::print("  loss        {:.6f} -> {:.6f}\n", result.losses.front(), result.losses.back());
    if (const auto diverged = first_not_finite(result.losses))
      fmt::print(
          "  warning     the loss is not finite from iteration {}: training diverged (try a "
          "smaller --lr)\n",
          *diverged + 1);
    if (plan_dtype(plan.pcg) != "float32")
      fmt::print("  precision   the {} plan ran in float32 (the executor computes in float32)\n",
                 plan_dtype(plan.pcg));
    if (o.profile) print_profile(j["profile"]);
    if (result.pipeline) print_run_pipeline(j["pipeline"]);
    if (o.check)
      fmt::print(
          "  check       max |diff| {:.3g} (losses {:.3g}, weights {:.3g}), max relative {:.3g} vs "
          "one rank\n",
          std::max(check.losses, check.weights), check.losses, check.weights, check.relative);
    if (recording)
      fmt::print(
          "  project     {}: run {}{}\n", project->file().string(), recording->run_id(),
          !o.profile ? std::string()
          // A pipeline's operator times are sums over micro-batches and recomputation, not the
          // per-task times later plans are costed with: the run keeps them, the profiles do not.
          : plan.pipeline ? std::string(", its operator times kept with the run (a pipeline's "
                                        "are sums over its micro-batches, not operator profiles)")
                          : fmt::format(", {} measured operator and collective times",
                                        j["project"]["op_profiles"].get<std::size_t>()));
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Train a plan (or a model) for real on CPU ranks (MPI) or GPUs (NCCL)");
  cmd->add_option("target", o->target,
                  "Plan file from `unity optimize --out`, or a MODEL to plan first")
      ->required();
  cmd->add_option("--backend", o->backend, "cpu (OpenBLAS + MPI) or cuda (cuBLAS/cuDNN + NCCL)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "Processes to run (default: the plan's devices)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--iterations", o->iterations, "Measured training iterations")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Iterations run before the measured ones")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--check", o->check,
                "Also train the one-rank reference and report max_abs_diff of losses and weights");
  cmd->add_flag("--json", o->json, "Print the result as one JSON object");
  cmd->add_option("--seed", o->seed, "Seed of the synthetic data and the initial weights")
      ->capture_default_str();
  cmd->add_option("--optimizer", o->optimizer, "sgd, sgd-momentum or adam (default: the plan's)")
      ->check(CLI::IsMember({"sgd", "sgd-momentum", "adam"}));
  cmd->add_option("--lr", o->learning_rate, "Learning rate (default: 0.01 for SGD, 0.001 for Adam)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads,
                  "BLAS threads per rank (default 1: a cpu-local rank is one core)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--timeout", o->timeout,
                  "Seconds a rank may make no progress before the run is ended")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--batch", o->batch,
                  "MODEL: global batch (default: the paper's per-device batch x ranks)")
      ->check(CLI::PositiveNumber);
  add_resize_options(cmd, o->resize);
  cmd->add_option("--scale", o->scale,
                  "MODEL: shrink a zoo model's widths, tables and depth by this factor (0, 1]")
      ->check(CLI::Range(1e-9, 1.0));
  cmd->add_option("--mode", o->mode, "MODEL: how to plan it")
      ->check(CLI::IsMember(search_mode_names()))
      ->capture_default_str();
  cmd->add_option("--machine", o->machine,
                  "MODEL: the machine to plan for (default cpu-local); plan: re-cost its mapping "
                  "on this machine "
                  "(e.g. the file of `unity calibrate`)");
  cmd->add_option(
      "--profiles", o->profiles,
      "Measured operator profiles for the prediction (a plan's) or the planning (a MODEL's); "
      "default with --machine FILE: FILE's .profiles.json from unity calibrate");
  cmd->add_option("--save-plan", o->save_plan,
                  "MODEL: keep the plan made for the run in this file");
  cmd->add_flag("--profile", o->profile,
                "Time every operator and print it beside the cost model's prediction (slows the "
                "run a little); with --project, the times are kept as the project's operator "
                "profiles and later plans made with the project are costed with them");
  add_layout_options(cmd, o->layout);
  add_loss_option(cmd, o->loss);
  add_project_option(cmd, o->project);
  cmd->add_option("--trace", o->trace,
                  "A pipelined run: write its measured timeline as a Chrome trace (JSON for "
                  "chrome://tracing and Perfetto)");
  cmd->add_flag("--mpirun-always", o->use_mpirun, "Start even a one-rank CPU run through mpirun");
  cmd->add_option("--mpirun", o->mpirun,
                  "The mpirun to use (default: $UNITY_MPIRUN, else mpirun on PATH)");
  cmd->add_option(
      "--mpirun-arg", o->mpirun_args,
      "Extra argument for mpirun (repeat), e.g. --mpirun-arg=--hostfile --mpirun-arg=hosts");
  cmd->add_option("--inject-fault", o->fault,
                  "Testing: make a rank fail, KIND@RANK:ITERATION (die, hang, error)")
      ->group("");
  cmd->callback([o, cmd] {
    for (const char* flag : {"--scale",
                             "--batch",
                             "--mode",
                             "--save-plan",
                             "--layers",
                             "--hidden",
                             "--heads",
                             "--seq",
                             "--vocab",
                             "--ffn",
                             "--kv-heads",
                             "--head-dim",
                             "--tie-embeddings",
                             "--loss",
                             "--tp",
                             "--pp",
                             "--micro-batches",
                             "--interleave",
                             "--recompute",
                             "--zero",
                             "--sequence-parallel",
                             "--overlap-grad-reduce",
                             "--tp-comm-overlap"})
      o->model_flags.push_back({flag, cmd->count(flag) > 0});
    run(*o);
  });
}

}  // namespace unity::cli
