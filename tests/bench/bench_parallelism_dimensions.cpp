// The paper's Figure 15a: BERT-Large on Summit with parallelism dimensions added one at a time.
//   data + model     rules whose target has no Reduce or AllReduce (sample, output-channel and
//                    placement parallelism)
//   + reduction      and the rules that split a reduction (partial sums), outside attention
//   + attention heads and the rules on MultiHeadAttention (head parallelism needs a reduction)
//   + pipeline       and pipeline layouts (stages, micro-batches, recomputation, ZeRO)
// Each step is the joint search's plan; the speedup is over "data + model", as in the paper.
//   build/tests/bench/unity_bench_parallelism_dimensions [--model bert-large] [--nodes 1,2,4,16]
//                                                        [--budget 200]
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/rules/rule.h"

using namespace unity;

namespace {

bool has(const RuleGraph& g, OpType t) {
  for (const auto& n : g.nodes)
    if (n.op == t) return true;
  return false;
}

bool reduces(const Rule& r) {
  return has(r.target, OpType::Reduce) || has(r.target, OpType::AllReduce);
}

std::shared_ptr<const RuleSet> subset(bool reduction, bool heads) {
  auto out = std::make_shared<RuleSet>();
  for (const Rule& r : default_rules().rules) {
    const bool attention = has(r.source, OpType::MultiHeadAttention);
    if (reduces(r) && (!reduction || (attention && !heads))) continue;
    out->rules.push_back(r);
  }
  return out;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "bert-large";
  std::vector<int> nodes = {1, 2, 4, 16};
  std::int64_t budget = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model") model = argv[i + 1];
    if (flag == "--nodes") nodes = parse_list(argv[i + 1]);
    if (flag == "--budget") budget = std::stoll(argv[i + 1]);
  }
  struct Step {
    const char* name;
    bool reduction, heads, pipeline;
    const char* paper;
  };
  const Step steps[] = {{"data + model", false, false, false, "1.0x"},
                        {"+ reduction", true, false, false, "1.0x"},
                        {"+ attention heads", true, true, false, "up to 1.2x"},
                        {"+ pipeline", true, true, true, "up to 1.4x"}};
  fmt::print(
      "{} on summit, joint search (budget {}); iteration ms and speedup over data + model\n\n",
      model, budget);
  fmt::print("| step | paper |");
  for (int n : nodes) fmt::print(" {} nodes ({} GPUs) |", n, 6 * n);
  fmt::print("\n|---|---|");
  for (std::size_t i = 0; i < nodes.size(); ++i) fmt::print("---:|");
  fmt::print("\n");
  std::vector<double> base(nodes.size(), 0);
  std::vector<std::string> origins;
  for (const Step& step : steps) {
    fmt::print("| {} | {} |", step.name, step.paper);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const MachineSpec machine = load_machine("summit", {nodes[i], 0});
      const Graph g = load_model_for_devices(model, machine.num_devices());
      OptimizeOptions o;
      o.mode = "joint";
      o.budget = budget;
      o.rule_set = subset(step.reduction, step.heads);
      o.pipelines = step.pipeline;
      const Plan plan = optimize_plan(g, machine, o);
      const double ms = plan.summary.iteration_time_ms;
      if (base[i] == 0) base[i] = ms;
      fmt::print(" {:.1f} ms, {:.2f}x{} |", ms, base[i] / ms,
                 plan.summary.fits_in_memory ? "" : " (does not fit)");
      std::fflush(stdout);
      origins.push_back(
          fmt::format("{} on {} nodes: {} ({:.1f} s)", step.name, nodes[i],
                      plan.summary.origin.empty() ? "joint search" : plan.summary.origin,
                      plan.summary.search_seconds));
    }
    fmt::print("\n");
  }
  fmt::print("\n");
  for (const auto& o : origins) fmt::print("- {}\n", o);
  return 0;
}
