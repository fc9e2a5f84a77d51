// Search time and plan quality of the joint search (paper 6.2, 6.5), printed as tables; never a
// test.
//   unity_bench_search                         the seven paper models on summit, 6..192 GPUs
//   unity_bench_search --models resnext50 --gpus 6,12 --modes joint,data-parallel
//   unity_bench_search --no-pipeline           the paper's space: no pipeline layouts
//   unity_bench_search --search-only           joint: the search's own plan, no baseline costed
//   unity_bench_search --no-pipeline --search-only --gpus 6,12,24,96,192 --modes joint,sequential
//                                              the README's Figure 15b table
//   unity_bench_search --ablation              resnext50 with and without splitting and the cache
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"

using namespace unity;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Row {
  double ms = 0, seconds = 0;
  bool fits = false;
  std::int64_t candidates = 0;
  int pieces = 0;
  std::string origin;
};

bool g_show = false;

void show(const Plan& p) {
  for (const auto& [id, n] : p.pcg.nodes())
    if (n.op.type == OpType::Input)
      fmt::print("  input {} '{}' {}\n", id, n.op.name, n.outputs[0].to_string());
  for (const auto& op : p.mapping.per_op) {
    const Node& n = p.pcg.node(op.node);
    fmt::print("  {:<28} {:<12} {:<32} {:<24} f {:.3f} b {:.3f} own {:.3f}+{:.3f} edges {:.3f}\n",
               n.op.name, std::string(to_string(n.op.type)), n.outputs[0].to_string(),
               op.view.to_string(), op.forward * 1e3, op.backward * 1e3, op.own.compute * 1e3,
               op.own.communication * 1e3, op.edges.communication * 1e3);
  }
}

Row run(const std::string& model, const std::string& machine, int gpus, const std::string& mode,
        OptimizeOptions o) {
  const MachineSpec m =
      load_machine(machine, gpus % 6 == 0 && machine == "summit" ? MachineSelection{gpus / 6, 0}
                                                                 : MachineSelection{0, gpus});
  o.mode = mode;
  const Graph g = load_model_for_devices(model, m.num_devices());
  const auto t0 = std::chrono::steady_clock::now();
  const Plan p = optimize_plan(g, m, o);
  if (g_show) show(p);
  Row r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ms = p.summary.iteration_time_ms;
  r.fits = p.summary.fits_in_memory;
  r.candidates = p.summary.candidates_evaluated;
  r.pieces = p.summary.pieces;
  r.origin = p.summary.origin;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {"resnext50", "inception-v3", "bert-large", "dlrm",
                                     "xdl",       "candle-uno",   "mlp"};
  std::vector<int> gpus = {6, 12, 24, 48, 192};
  std::vector<std::string> modes = {"joint"};
  std::string machine = "summit";
  bool ablation = false;
  OptimizeOptions base;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--models")
      models = split_list(next());
    else if (a == "--gpus") {
      gpus.clear();
      for (const auto& g : split_list(next())) gpus.push_back(std::stoi(g));
    } else if (a == "--modes")
      modes = split_list(next());
    else if (a == "--machine")
      machine = next();
    else if (a == "--budget")
      base.budget = std::stoll(next());
    else if (a == "--optimizer")
      base.optimizer = next();
    else if (a == "--no-pipeline")
      base.pipelines = false;
    else if (a == "--search-only")
      base.baselines = false;
    else if (a == "--ablation")
      ablation = true;
    else if (a == "--show")
      g_show = true;
    else {
      fmt::print(stderr, "unknown argument {}\n", a);
      return 1;
    }
  }
  if (ablation) {
    fmt::print("ResNeXt-50 search time on {} (paper Table 2), seconds\n\n", machine);
    fmt::print("| GPUs | all | w/o split | w/o cache+split | iteration ms (all / w/o split) |\n");
    fmt::print("|---:|---:|---:|---:|---:|\n");
    for (int n : gpus) {
      OptimizeOptions all = base, nosplit = base, none = base;
      nosplit.split = false;
      none.split = false;
      none.cache = false;
      const Row a = run("resnext50", machine, n, "joint", all);
      const Row b = run("resnext50", machine, n, "joint", nosplit);
      const Row c = run("resnext50", machine, n, "joint", none);
      fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} / {:.1f} |\n", n, a.seconds, b.seconds,
                 c.seconds, a.ms, b.ms);
      std::fflush(stdout);
    }
    return 0;
  }
  fmt::print(
      "| model | GPUs | mode | iteration ms | fits | search s | candidates | pieces | origin |\n");
  fmt::print("|---|---:|---|---:|---|---:|---:|---:|---|\n");
  for (const auto& model : models)
    for (int n : gpus)
      for (const auto& mode : modes) {
        const Row r = run(model, machine, n, mode, base);
        fmt::print("| {} | {} | {} | {:.2f} | {} | {:.1f} | {} | {} | {} |\n", model, n, mode, r.ms,
                   r.fits ? "yes" : "no", r.seconds, r.candidates, r.pieces, r.origin);
        std::fflush(stdout);
      }
  return 0;
}
