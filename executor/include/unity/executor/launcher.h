#pragma once
// Starting a distributed run: `mpirun -np N unity-worker PLAN ...` with the flags this machine
// needs, following the workers' events (progress per iteration, errors, watchdog timeouts), and
// turning a failure into one message that names the cause and the rank: mpirun missing, a rank that
// died, a rank that hung or a collective that never completed. Never hangs: every wait has a
// deadline.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/errors.h"
#include "unity/executor/training.h"

namespace unity::executor {

// A run that could not start or did not finish: an InputError, so the CLI exits with code 1.
struct RunError : InputError {
  using InputError::InputError;
};

struct LaunchOptions {
  std::filesystem::path plan;
  int ranks = 1;
  std::string backend = "cpu";
  int iterations = 10;
  int warmup = 0;
  std::uint64_t seed = 1;
  std::string optimizer;        // empty: the plan's
  double learning_rate = 0;     // 0: the optimizer's default
  int threads = 1;              // BLAS threads per rank
  double timeout_seconds = 60;  // a rank without progress for this long ends the run
  bool collect_weights = false;
  bool profile = false;                  // time every operator (TrainingResult::profile)
  std::string inject_fault;              // testing: KIND@RANK:ITERATION (die, hang, error)
  std::string worker;                    // empty: unity-worker next to this program, else on PATH
  std::string mpirun;                    // empty: $UNITY_MPIRUN, else mpirun on PATH
  std::vector<std::string> mpirun_args;  // extra arguments (e.g. --hostfile hosts)
  std::function<void(const IterationReport&)> on_iteration;
  // Instead of training: measure the machine (`unity calibrate`); the plan is not used.
  bool calibrate = false;
  double calibration_seconds = 0.25;
  bool calibration_quick = false;  // CalibrationOptions::quick
};

struct LaunchResult {
  TrainingResult training;           // a training run
  nlohmann::json result;             // rank 0's result file as written
  std::vector<std::string> command;  // what was run
};

LaunchResult launch_run(const LaunchOptions& options);

// Pieces of the launcher, public for tests.
// The mpirun to use; throws RunError naming what was looked for when there is none.
std::string find_mpirun(const std::string& explicit_path);
// unity-worker beside the running program (or `explicit_path`); throws RunError when missing.
std::string find_worker(const std::string& explicit_path);
std::vector<std::string> mpirun_command(const LaunchOptions& o, const std::string& mpirun,
                                        const std::string& worker,
                                        const std::filesystem::path& workdir);
// A command line as a shell would take it (for --verbose and error messages).
std::string command_text(const std::vector<std::string>& argv);
// One message for a failed run, from the workers' events and mpirun's own output.
std::string describe_failure(const std::vector<nlohmann::json>& events,
                             const std::vector<std::string>& output, int exit_status,
                             int last_iteration);

}  // namespace unity::executor
