#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace unity::executor::detail {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& extra_env) {
  int out[2], err[2], exec_status[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(exec_status, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is built before fork (no allocation after it).
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& e : extra_env) env_strings.push_back(e);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    close(exec_status[0]);
    execvpe(args[0], args.data(), env.data());
    const int e = errno;
    (void)!write(exec_status[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid_, pid_);
  close(out[1]);
  close(err[1]);
  close(exec_status[1]);
  int child_errno = 0;
  const ssize_t n = read(exec_status[0], &child_errno, sizeof child_errno);
  close(exec_status[0]);
  out_ = out[0];
  err_ = err[0];
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(child_errno));
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) kill_group(500);
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
}

bool ChildProcess::poll(int timeout_ms, const std::function<void(const std::string&, bool)>& line) {
  pollfd fds[2];
  int count = 0;
  if (out_ >= 0) fds[count++] = {out_, POLLIN, 0};
  if (err_ >= 0) fds[count++] = {err_, POLLIN, 0};
  if (count == 0) return false;
  if (::poll(fds, static_cast<nfds_t>(count), timeout_ms) <= 0) return true;
  for (int i = 0; i < count; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const bool is_err = fds[i].fd == err_;
    std::string& buf = is_err ? err_buf_ : out_buf_;
    char chunk[65536];
    const ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
    if (n <= 0) {
      if (!buf.empty()) line(buf, is_err);
      buf.clear();
      close(fds[i].fd);
      (is_err ? err_ : out_) = -1;
      continue;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0, nl;
    while ((nl = buf.find('\n', start)) != std::string::npos) {
      line(buf.substr(start, nl - start), is_err);
      start = nl + 1;
    }
    buf.erase(0, start);
  }
  return out_ >= 0 || err_ >= 0;
}

std::optional<int> ChildProcess::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return status_;
}

int ChildProcess::kill_group(int grace_ms) {
  if (pid_ <= 0) return -1;
  if (status_) return *status_;
  kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (try_wait()) return *status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  status_ = status;
  return status;
}

}  // namespace unity::executor::detail
