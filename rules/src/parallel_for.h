#pragma once
// body(0) .. body(n - 1) on `threads` threads (the caller's among them), each taking the next index
// when it is free: long and short items balance out, in whatever order the threads come.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace unity::rules {

template <typename F>
void parallel_for(std::size_t n, int threads, F&& body) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace unity::rules
