// launch_run: mpirun + unity-worker, events, deadlines, and a readable account of failures.
#include "unity/executor/launcher.h"

#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "child_process.h"
#include "unity/core/json_io.h"
#include "unity/executor/blas_core.h"
#include "unity/executor/run_files.h"

namespace unity::executor {
namespace {

namespace fs = std::filesystem;

std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    const std::string dir =
        dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// Open MPI's shared-memory transport copies large messages with process_vm_readv (CMA). Some
// containers and kernels (Yama ptrace_scope >= 1, seccomp without CAP_SYS_PTRACE) forbid it between
// sibling processes, and every large message then fails. Probe it the way MPI uses it: one child
// reading another's memory.
bool cross_memory_attach_works() {
  static const bool works = [] {
    volatile long secret = 0x5eed;
    const pid_t target = fork();
    if (target < 0) return true;
    if (target == 0) {
      pause();
      _exit(0);
    }
    const pid_t reader = fork();
    if (reader == 0) {
      long copy = 0;
      iovec local{&copy, sizeof copy};
      iovec remote{const_cast<long*>(&secret), sizeof copy};
      const ssize_t n = process_vm_readv(target, &local, 1, &remote, 1, 0);
      _exit(n == static_cast<ssize_t>(sizeof copy) && copy == 0x5eed ? 0 : 1);
    }
    int status = 1;
    if (reader > 0) waitpid(reader, &status, 0);
    kill(target, SIGKILL);
    waitpid(target, nullptr, 0);
    return reader > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return works;
}

// Threads of this process that are running (state R in /proc/self/task/*/stat).
int own_running_threads() {
  int running = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');  // the state follows the parenthesised command name
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++running;
  }
  return std::max(running, 1);
}

// Cores other processes keep busy right now: the runnable count of /proc/loadavg less this
// process's running threads, averaged over a few samples. Unlike the load average it forgets work
// that just ended, such as the ranks of the previous run, so back-to-back runs get the same flags.
double busy_cores_elsewhere() {
  double sum = 0;
  constexpr int kSamples = 8;
  for (int i = 0; i < kSamples; ++i) {
    const int own = own_running_threads();
    std::ifstream in("/proc/loadavg");
    double one = 0, five = 0, fifteen = 0;
    int running = 1;
    char slash = 0;
    in >> one >> five >> fifteen >> running >> slash;
    sum += std::max(0, running - own);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return sum / kSamples;
}

std::string self_directory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

}  // namespace

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \t\"'") == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

namespace {

struct Workdir {
  Workdir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/unity-run-XXXXXX";
    if (!mkdtemp(pattern.data()))
      throw RunError(fmt::format("cannot create a directory in {}", pattern));
    path = pattern;
  }
  ~Workdir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

}  // namespace

std::string find_mpirun(const std::string& explicit_path) {
  std::string wanted = explicit_path;
  if (wanted.empty()) {
    const char* env = std::getenv("UNITY_MPIRUN");
    wanted = env && *env ? env : "mpirun";
  }
  const std::string found = search_path(wanted);
  if (found.empty())
    throw RunError(
        fmt::format("{} not found{}: a run on more than one rank starts its ranks with Open MPI's "
                    "mpirun (Debian: "
                    "apt-get install openmpi-bin), or set UNITY_MPIRUN / --mpirun; a one-rank run "
                    "(--ranks 1) needs no mpirun",
                    wanted, wanted.find('/') == std::string::npos ? " on PATH" : ""));
  return found;
}

std::string find_worker(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (access(explicit_path.c_str(), X_OK) != 0)
      throw RunError(fmt::format("unity-worker '{}' is not executable", explicit_path));
    return explicit_path;
  }
  if (const char* env = std::getenv("UNITY_WORKER"); env && *env) return find_worker(env);
  const std::string beside = self_directory() + "/unity-worker";
  if (access(beside.c_str(), X_OK) == 0) return beside;
  const std::string on_path = search_path("unity-worker");
  if (!on_path.empty()) return on_path;
  throw RunError("unity-worker not found beside " + self_directory() +
                 " nor on PATH (set UNITY_WORKER)");
}

std::vector<std::string> mpirun_command(const LaunchOptions& o, const std::string& mpirun,
                                        const std::string& worker, const fs::path& workdir) {
  std::vector<std::string> c{mpirun, "-np", std::to_string(o.ranks)};
  if (geteuid() == 0) c.push_back("--allow-run-as-root");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool oversubscribed = static_cast<unsigned>(o.ranks * o.threads) > cores;
  if (oversubscribed) {
    // More ranks than cores: allowed (a cpu-local rank is a process, not a pinned core) and
    // unbound, so the kernel shares the cores instead of stacking ranks on one. Open MPI then also
    // makes waiting ranks yield.
    c.insert(c.end(), {"--oversubscribe", "--bind-to", "none"});
  }
  // Open MPI's waiting ranks spin. When the cores are shared with other work, a spinning rank takes
  // the time its peer needs to answer; yielding makes collectives faster there and costs little
  // elsewhere.
  if (!oversubscribed &&
      static_cast<double>(o.ranks * o.threads) + std::round(busy_cores_elsewhere()) >
          static_cast<double>(cores))
    c.insert(c.end(), {"--mca", "mpi_yield_when_idle", "1"});
  if (!cross_memory_attach_works())
    c.insert(c.end(), {"--mca", "btl_vader_single_copy_mechanism", "none"});
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
    c.insert(c.end(), {"-x", fmt::format("{}={}", var, o.threads)});
  // Ranks on other nodes get the kernels chosen here too (mpirun passes the variable on).
  if (const auto core = openblas_core_override())
    c.insert(c.end(), {"-x", "OPENBLAS_CORETYPE=" + *core});
  else if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set && *set)
    c.insert(c.end(), {"-x", "OPENBLAS_CORETYPE"});
  c.insert(c.end(), o.mpirun_args.begin(), o.mpirun_args.end());
  if (o.calibrate) {
    c.insert(c.end(),
             {worker, "--calibrate", "--calibration-seconds",
              fmt::format("{}", o.calibration_seconds), "--backend", o.backend, "--threads",
              std::to_string(o.threads), "--timeout", fmt::format("{}", o.timeout_seconds),
              "--events", "--result", (workdir / "result.json").string()});
    if (o.calibration_quick) c.push_back("--calibration-quick");
    return c;
  }
  c.insert(c.end(), {worker, fs::absolute(o.plan).string(), "--backend", o.backend, "--iterations",
                     std::to_string(o.iterations), "--warmup", std::to_string(o.warmup), "--seed",
                     std::to_string(o.seed), "--threads", std::to_string(o.threads), "--timeout",
                     fmt::format("{}", o.timeout_seconds), "--events", "--result",
                     (workdir / "result.json").string()});
  if (!o.optimizer.empty()) c.insert(c.end(), {"--optimizer", o.optimizer});
  if (o.learning_rate > 0) c.insert(c.end(), {"--lr", fmt::format("{}", o.learning_rate)});
  if (o.collect_weights) c.insert(c.end(), {"--weights", (workdir / "weights.bin").string()});
  if (o.profile) c.push_back("--profile");
  if (!o.inject_fault.empty()) c.insert(c.end(), {"--inject-fault", o.inject_fault});
  return c;
}

LaunchResult launch_run(const LaunchOptions& o) {
  const std::string mpirun = find_mpirun(o.mpirun);
  const std::string worker = find_worker(o.worker);
  Workdir dir;
  LaunchResult result;
  result.command = mpirun_command(o, mpirun, worker, dir.path);

  std::optional<detail::ChildProcess> child;
  try {
    child.emplace(result.command, std::vector<std::string>{});
  } catch (const std::exception& e) {
    throw RunError(e.what());
  }
  using clock = std::chrono::steady_clock;
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
  };
  // The workers' own watchdogs fire after `timeout` without progress; the launcher waits a little
  // longer for their reports before it gives up on them itself.
  const double patience = o.timeout_seconds > 0 ? o.timeout_seconds + 15 : 1e9;
  const double startup = std::max(120.0, patience);
  auto last_event = clock::now();
  bool started = false, finished = false;
  int last_iteration = -1;
  std::vector<nlohmann::json> events;
  std::deque<std::string> output;  // mpirun's and the workers' other lines, the last 60
  std::string stall;

  auto on_line = [&](const std::string& line, bool) {
    if (line.rfind(kEventPrefix, 0) != 0) {
      output.push_back(line);
      if (output.size() > 60) output.pop_front();
      return;
    }
    nlohmann::json e;
    try {
      e = nlohmann::json::parse(line.substr(std::string(kEventPrefix).size()));
    } catch (const nlohmann::json::exception&) {
      return;
    }
    last_event = clock::now();
    const std::string kind = e.value("event", "");
    if (kind == "started") started = true;
    if (kind == "finished") finished = true;
    if (kind == "iteration") {
      IterationReport r;
      r.index = e.value("index", 0);
      r.warmup = e.value("warmup", false);
      r.loss = json_measured_or(e, "loss", 0.0);
      r.milliseconds = json_measured_or(e, "ms", 0.0);
      last_iteration = r.index;
      if (o.on_iteration) o.on_iteration(r);
      return;
    }
    events.push_back(std::move(e));
  };

  while (child->poll(200, on_line)) {
    const double quiet = std::chrono::duration<double>(clock::now() - last_event).count();
    if (!started && quiet > startup) {
      stall = fmt::format("the workers did not start within {:.0f} s", startup);
      break;
    }
    if (started && !finished && quiet > patience) {
      stall = fmt::format("no progress from any rank for {:.0f} s (last completed iteration: {})",
                          quiet, last_iteration + 1);
      break;
    }
  }
  int status = 0;
  if (!stall.empty()) {
    status = child->kill_group(2000);
  } else {
    // Both streams closed: mpirun is exiting; give it a bounded moment.
    const auto deadline = clock::now() + seconds(30);
    while (!child->try_wait() && clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    status = child->try_wait() ? *child->try_wait() : child->kill_group(2000);
  }
  const bool ok = stall.empty() && finished && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    std::vector<std::string> lines(output.begin(), output.end());
    std::string message = describe_failure(events, lines, status, last_iteration);
    if (!stall.empty()) message = stall + "; " + message;
    throw RunError(message);
  }
  if (o.calibrate) {
    result.result = read_json_file(dir.path / "result.json");
  } else {
    result.training = read_run_result(dir.path / "result.json", &result.result);
  }
  return result;
}

namespace {

std::string failure_text(const std::vector<nlohmann::json>& events,
                         const std::vector<std::string>& output, int exit_status,
                         int last_iteration) {
  const std::string at = fmt::format("during iteration {}", last_iteration + 2);
  // 1. A rank reported an error.
  for (const auto& e : events)
    if (e.value("event", "") == "error")
      return fmt::format("rank {} failed {}: {}", e.value("rank", -1), at,
                         e.value("message", std::string("?")));
  // 2. Watchdogs: ranks that stopped while computing are the cause; the others waited for them.
  std::vector<const nlohmann::json*> busy, waiting;
  for (const auto& e : events)
    if (e.value("event", "") == "timeout")
      (e.value("waiting", std::string()).empty() ? busy : waiting).push_back(&e);
  auto where = [](const nlohmann::json& e) {
    std::string w = fmt::format("iteration {}, {}", e.value("iteration", 0) + 1,
                                e.value("phase", std::string()));
    if (!e.value("where", std::string()).empty()) w += " of " + e.value("where", std::string());
    return w;
  };
  if (!busy.empty()) {
    const auto& e = *busy.front();
    std::string m = fmt::format("rank {} hung: no progress for {:.0f} s ({})", e.value("rank", -1),
                                e.value("seconds", 0.0), where(e));
    for (const auto* w : waiting)
      m += fmt::format("; rank {} was waiting for it in the {}", w->value("rank", -1),
                       w->value("waiting", std::string()));
    return m;
  }
  if (!waiting.empty()) {
    const auto& e = *waiting.front();
    std::string ranks;
    for (const auto* w : waiting)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(w->value("rank", -1));
    return fmt::format(
        "hung collective: the {} did not complete within {:.0f} s ({}); ranks waiting: {}",
        e.value("waiting", std::string()), e.value("seconds", 0.0), where(e), ranks);
  }
  // 3. mpirun's account of a rank that died.
  static const std::regex signal_re(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  static const std::regex name_re(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex code_re(R"(Exit code:\s*(\d+))");
  std::smatch m;
  std::string joined;
  for (const auto& l : output) joined += l + "\n";
  if (std::regex_search(joined, m, signal_re))
    return fmt::format("rank {} died {} (killed by signal {}, {}, on node {})", m[1].str(), at,
                       m[4].str(), m[5].str(), m[3].str());
  if (std::regex_search(joined, m, name_re)) {
    std::string rank = m[1].str();
    std::string code = std::regex_search(joined, m, code_re) ? m[1].str() : "?";
    return fmt::format("rank {} exited with code {} {}", rank, code, at);
  }
  std::string tail;
  for (std::size_t i = output.size() > 8 ? output.size() - 8 : 0; i < output.size(); ++i)
    tail += "\n  " + output[i];
  if (WIFSIGNALED(exit_status))
    return fmt::format("mpirun was killed by signal {}{}", WTERMSIG(exit_status), tail);
  return fmt::format("mpirun exited with code {} {}{}",
                     WIFEXITED(exit_status) ? WEXITSTATUS(exit_status) : -1, at, tail);
}

// A pipelined run names each rank's stage too ("rank 3 (pipeline stage 1)"): which layers were
// lost.
std::string with_pipeline_stages(const std::string& message,
                                 const std::vector<nlohmann::json>& events) {
  std::vector<int> stages;
  for (const auto& e : events)
    if (e.value("event", "") == "started" && e.contains("pipeline_stages_of_ranks"))
      stages = e.at("pipeline_stages_of_ranks").get<std::vector<int>>();
  if (stages.empty()) return message;
  static const std::regex rank_re(R"(\brank (\d+))");
  std::string out;
  auto begin = message.cbegin();
  for (std::sregex_iterator it(message.begin(), message.end(), rank_re), end; it != end; ++it) {
    const auto& m = *it;
    out.append(begin, m[0].first);
    const int r = std::stoi(m[1].str());
    out += m[0].str();
    if (r >= 0 && r < static_cast<int>(stages.size()))
      out += fmt::format(" (pipeline stage {})", stages[r]);
    begin = m[0].second;
  }
  out.append(begin, message.cend());
  return out;
}

}  // namespace

std::string describe_failure(const std::vector<nlohmann::json>& events,
                             const std::vector<std::string>& output, int exit_status,
                             int last_iteration) {
  return with_pipeline_stages(failure_text(events, output, exit_status, last_iteration), events);
}

}  // namespace unity::executor
