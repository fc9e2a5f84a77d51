#pragma once
// A child process in its own process group, with its stdout and stderr read line by line.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace unity::executor::detail {

class ChildProcess {
 public:
  // Starts `argv` with `extra_env` added to the environment; throws std::runtime_error when fork or
  // exec fails (exec failure is reported through a pipe, not a silent exit).
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Waits up to `timeout_ms` for output; calls `line(text, from_stderr)` for each complete line.
  // Returns false once both streams are closed.
  bool poll(int timeout_ms, const std::function<void(const std::string&, bool)>& line);
  // The exit status (as waitpid reports it) once the process has ended, else nullopt.
  std::optional<int> try_wait();
  // SIGTERM to the whole group, then SIGKILL after `grace_ms`; waits for the process.
  int kill_group(int grace_ms);

 private:
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
  std::optional<int> status_;
};

}  // namespace unity::executor::detail
