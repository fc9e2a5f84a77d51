// One CPU training step of an MLP (4 Linear layers of 1024 with ReLU, batch 256, fp32, softmax
// cross-entropy over 1024 classes, SGD), one thread: ours (unity's executor, OpenBLAS) against
// PyTorch (Debian's python3-torch, torch.set_num_threads(1)) in the same run. Rounds alternate so
// both see the same machine; the table prints each round's median and the best of them.
//   build/tests/executor/unity_bench_executor_speed [--rounds 3] [--iterations 20]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "torch_python.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/executor/communicator.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"

using namespace unity;
using namespace unity::executor;

namespace {

constexpr int kBatch = 256, kWidth = 1024, kLayers = 4;

double ours(int iterations) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kWidth});
  for (int i = 0; i < kLayers; ++i) {
    x = b.linear(x, kWidth, "fc" + std::to_string(i));
    if (i + 1 < kLayers) x = b.relu(x, "relu" + std::to_string(i));
  }
  b.softmax_cross_entropy(x, b.input("y", {kBatch}, DataType::Int64), "loss");
  const Program p = lower_plan(g, single_device_views(g), 1);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  TrainingOptions o;
  o.iterations = iterations;
  o.warmup = 3;
  return median(train(p, o, *backend, *comm).iteration_ms);
}

const char* kTorchScript = R"(
import sys, time, statistics, torch
torch.set_num_threads(1)
torch.manual_seed(0)
B, W, L, iters = 256, 1024, 4, int(sys.argv[1])
layers = []
for i in range(L):
    layers.append(torch.nn.Linear(W, W))
    if i + 1 < L: layers.append(torch.nn.ReLU())
model = torch.nn.Sequential(*layers)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.rand(B, W) * 2 - 1
y = torch.randint(0, W, (B,))
loss_fn = torch.nn.CrossEntropyLoss()
def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
for _ in range(3): step()
times = []
for _ in range(iters):
    t = time.perf_counter(); step(); times.append((time.perf_counter() - t) * 1e3)
print(statistics.median(times))
)";

double torch(const std::string& python, int iterations) {
  const std::string script = "/tmp/unity_bench_torch_mlp.py";
  if (FILE* f = std::fopen(script.c_str(), "w")) {
    std::fputs(kTorchScript, f);
    std::fclose(f);
  }
  const std::string cmd =
      fmt::format("OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 {} {} {}", python, script, iterations);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  double ms = -1;
  if (std::fscanf(pipe, "%lf", &ms) != 1) ms = -1;
  pclose(pipe);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, iterations = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--rounds") rounds = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--iterations") iterations = std::atoi(argv[i + 1]);
  }
  const std::string python = python_with_torch();
  fmt::print(
      "MLP training step: {} Linear layers of {}, batch {}, fp32, one thread (median of {} "
      "steps)\n",
      kLayers, kWidth, kBatch, iterations);
  fmt::print("{:>6} {:>12} {:>12} {:>8}\n", "round", "unity ms", "pytorch ms", "ratio");
  double best_ours = 1e30, best_torch = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const double a = ours(iterations);
    const double t = python.empty() ? -1 : torch(python, iterations);
    best_ours = std::min(best_ours, a);
    if (t > 0) best_torch = std::min(best_torch, t);
    fmt::print("{:>6} {:>12.2f} {:>12} {:>8}\n", r + 1, a, t > 0 ? fmt::format("{:.2f}", t) : "n/a",
               t > 0 ? fmt::format("{:.3f}", a / t) : "n/a");
  }
  if (python.empty()) {
    fmt::print("PyTorch not found (Debian: apt-get install python3-torch)\n");
    return 0;
  }
  fmt::print("{:>6} {:>12.2f} {:>12.2f} {:>8.3f}   (ours / PyTorch; target <= 1.3)\n", "best",
             best_ours, best_torch, best_ours / best_torch);
  return 0;
}
