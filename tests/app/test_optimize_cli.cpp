// `unity optimize` and `unity show PLAN`: the JSON contract of DESIGN.md and plan files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

TEST(OptimizeCli, JsonHasTheContractFields) {
  auto r = run_cli("optimize mnist-mlp --machine summit --gpus 2 --mode data-parallel --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* field :
       {"model", "machine", "devices", "mode", "iteration_time_ms", "compute_ms",
        "communication_ms", "communication_bytes", "peak_memory_bytes", "fits_in_memory",
        "search_seconds", "candidates_evaluated", "substitutions_applied", "operators",
        "parallel_operators"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["devices"], 2);
  EXPECT_EQ(j["communication_bytes"].get<double>(), 3252224.0);
  EXPECT_EQ(j["fits_in_memory"], true);
}

TEST(OptimizeCli, PlanFileShowsWithCosts) {
  const auto plan = fs::temp_directory_path() / (std::to_string(::getpid()) + "_plan.json");
  auto r = run_cli("optimize resnext50 --machine summit --nodes 2 --mode data-parallel --out " +
                   plan.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(plan));
  EXPECT_EQ(j["format"], "unity-plan");
  EXPECT_EQ(j["summary"]["devices"], 12);
  EXPECT_FALSE(j["operators"].empty());
  for (const auto& op : j["operators"]) {
    ASSERT_TRUE(op.contains("view"));
    EXPECT_TRUE(op.contains("forward_ms"));
  }
  auto show = run_cli("show " + plan.string() + " --costs");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("backward ms"), std::string::npos);
  EXPECT_NE(show.out.find("conv1"), std::string::npos) << show.out.substr(0, 2000);
  fs::remove(plan);
}

TEST(OptimizeCli, MemoryVerdictAndBadInput) {
  auto dlrm = run_cli("optimize dlrm --machine summit --mode data-parallel --json");
  ASSERT_EQ(dlrm.exit_code, 0) << dlrm.err;
  EXPECT_EQ(nlohmann::json::parse(dlrm.out)["fits_in_memory"], false);

  const auto out = fs::temp_directory_path() / (std::to_string(::getpid()) + "_never.json");
  auto too_many = run_cli("optimize mnist-mlp --machine pcie-4gpu --gpus 8 --out " + out.string());
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_FALSE(too_many.err.empty());
  EXPECT_FALSE(fs::exists(out));
  auto bad_mode = run_cli("optimize mnist-mlp --machine summit --mode telepathy");
  EXPECT_EQ(bad_mode.exit_code, 1);
  auto no_machine = run_cli("optimize mnist-mlp");
  EXPECT_EQ(no_machine.exit_code, 1);
}

// A config published in float32 (OLMo 2's) plans in it, and the model line says so unless --dtype
// chose.
TEST(OptimizeCli, AFloat32ConfigSaysItPlansInTheConfigsDtype) {
  const std::string olmo = "optimize " + std::string(UNITY_SOURCE_DIR) +
                           "/models/hf/OLMo-2-1124-7B --machine dgx-h100 --gpus 8 --seq 1024 "
                           "--layers 2";
  auto config = run_cli(olmo);
  ASSERT_EQ(config.exit_code, 0) << config.err;
  EXPECT_NE(config.out.find("float32 (the config's torch_dtype; --dtype bf16 plans mixed "
                            "precision)"),
            std::string::npos)
      << config.out;
  auto bf16 = run_cli(olmo + " --dtype bf16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_EQ(bf16.out.find("the config's torch_dtype"), std::string::npos);
}

// A plan that does not fit says how many devices the model's state alone takes: Llama 3.1 8B's
// 8.03B parameters at 18 bytes (bf16, Adam) are 134.6 GiB, two H100s fully sharded.
TEST(OptimizeCli, APlanThatDoesNotFitStatesTheFewestDevicesForTheModelsState) {
  const std::string llama = std::string(UNITY_SOURCE_DIR) + "/models/hf/Llama-3.1-8B";
  auto one = run_cli("optimize " + llama + " --machine dgx-h100 --gpus 1 --seq 1024");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("does not fit"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("memory floor   the weights, gradients and optimizer state are 134.6 "
                         "GiB (18 bytes a parameter): fully sharded (ZeRO-3), at least 2 devices "
                         "of 80.0 GiB before any activation, more than the 1 planned on"),
            std::string::npos)
      << one.out;
  auto json = run_cli("optimize " + llama + " --machine dgx-h100 --gpus 1 --seq 1024 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["fewest_devices_for_state"], 2);
  EXPECT_DOUBLE_EQ(j["model_state_bytes"].get<double>(), 18.0 * 8030261248.0);
  // On 16 the plan fits and says nothing of it.
  auto sixteen = run_cli("optimize " + llama + " --machine dgx-h100 --gpus 16 --seq 1024");
  ASSERT_EQ(sixteen.exit_code, 0) << sixteen.err;
  EXPECT_EQ(sixteen.out.find("memory floor"), std::string::npos);
}

// --head-dim beside --ffn and --kv-heads: heads of their own size plan, and a bad size exits 1
// with a message.
TEST(OptimizeCli, HeadDimResizesTheAttentionAndABadOneExitsOne) {
  auto wide = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim 32 --json");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  auto plain = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto w = nlohmann::json::parse(wide.out);
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_NE(w["model"].get<std::string>().find("head_dim=32"), std::string::npos) << w["model"];
  // Heads of 32 instead of 16: more FLOPs in Megatron-LM's count.
  EXPECT_GT(w["model_flops_per_iteration"].get<double>(),
            p["model_flops_per_iteration"].get<double>());

  auto odd = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim 33");
  EXPECT_EQ(odd.exit_code, 1);
  EXPECT_NE(odd.err.find("--head-dim 33: must be even"), std::string::npos) << odd.err;
  auto negative = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim -8");
  EXPECT_EQ(negative.exit_code, 1);
  EXPECT_NE(negative.err.find("--head-dim: must be a positive whole number, got -8"),
            std::string::npos)
      << negative.err;
  auto not_family = run_cli("optimize mnist-mlp --machine cpu-local --gpus 2 --head-dim 32");
  EXPECT_EQ(not_family.exit_code, 1);
  EXPECT_FALSE(not_family.err.empty());
}

// --dtype takes the frameworks' short names beside Unity's (bf16 is bfloat16, fp16 float16), in
// any case; anything else exits 1 naming the dtypes there are.
TEST(OptimizeCli, DtypeTakesTheShortNames) {
  for (const auto& [given, meant] :
       {std::pair{"bf16", "bfloat16"}, std::pair{"FP16", "float16"}, std::pair{"fp32", "float32"},
        std::pair{"bfloat16", "bfloat16"}}) {
    auto r = run_cli(std::string("optimize gpt-tiny --machine dgx-h100 --gpus 8 --mode "
                                 "data-parallel --json --dtype ") +
                     given);
    ASSERT_EQ(r.exit_code, 0) << given << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["dtype"].get<std::string>(), meant) << given;
  }
  auto int8 = run_cli("optimize gpt-tiny --machine cpu-local --gpus 2 --dtype int8");
  EXPECT_EQ(int8.exit_code, 1);
  EXPECT_NE(int8.err.find("'int8' is not a dtype Unity trains in: float32 (fp32), float16 (fp16), "
                          "bfloat16 (bf16) or fp8"),
            std::string::npos)
      << int8.err;
}

// A plan on a GPU no published run of its kind was compared on says so instead of nothing; on a
// checked family it states the record.
TEST(OptimizeCli, StatesWhetherItsKindOfPredictionWasChecked) {
  auto h200 = run_cli("optimize gpt-tiny --machine dgx-h200 --gpus 8");
  ASSERT_EQ(h200.exit_code, 0) << h200.err;
  EXPECT_NE(h200.out.find("  checked        no published run of a dense model on NVIDIA "
                          "H200-SXM-141GB compared yet: the cost model's mechanisms alone"),
            std::string::npos)
      << h200.out;
  auto h100 = run_cli("optimize gpt-tiny --machine dgx-h100 --gpus 8");
  ASSERT_EQ(h100.exit_code, 0) << h100.err;
  EXPECT_NE(h100.out.find("  checked        H100: "), std::string::npos) << h100.out;
}

// An overlapped gradient sync says what stays exposed and its least: gpt-tiny's 134k weights
// are fewer than one bucket holds, so its last bucket is all of them.
TEST(OptimizeCli, OverlappedGradientSyncStatesItsLastBucket) {
  auto r = run_cli(
      "optimize gpt-tiny --machine dgx-h100 --gpus 8 --mode expert --tp 1 --pp 1 --zero 1 "
      "--overlap-grad-reduce");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sync        rank 0: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("its last gradient bucket (its first 134.4 k weights)"), std::string::npos)
      << r.out;
  auto plain = run_cli("optimize gpt-tiny --machine dgx-h100 --gpus 8 --mode expert --tp 1 --pp 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("sync        "), std::string::npos) << plain.out;
}

// The joint search's plan of Llama 2 7B on 16 H100s cuts stages inside layers: export refuses it
// and says what plans one that exports; `--launchable` does, and its plan exports to Megatron-LM.
TEST(OptimizeCli, LaunchablePlansExportAsTheyAre) {
  const auto dir = fs::temp_directory_path() / (std::to_string(::getpid()) + "_launchable");
  fs::create_directories(dir);
  const std::string own = (dir / "own.json").string(), plan = (dir / "plan.json").string();
  const std::string model = "optimize llama-7b --machine dgx-h100 --gpus 16 --batch 64 --out ";
  auto r = run_cli(model + own);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  launch         no launcher runs it as it is: model chunk 0 ends "
                       "inside layer"),
            std::string::npos)
      << r.out;
  auto e = run_cli("export " + own + " --to megatron");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("unity optimize --launchable plans only what a launcher takes"),
            std::string::npos)
      << e.err;
  r = run_cli(model + plan + " --launchable");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  launch         Megatron-LM runs it as it is"), std::string::npos)
      << r.out;
  e = run_cli("export " + plan + " --to megatron");
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("--pipeline-model-parallel-size 2"), std::string::npos) << e.out;
  // torchtitan has no flavor of Llama 2 7B's shape: --launcher torchtitan says so before it
  // searches (no layout changes that), writes nothing.
  const std::string titan = (dir / "titan.json").string();
  r = run_cli(model + titan + " --launcher torchtitan --progress");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--launcher torchtitan: torchtitan does not train 'llama-7b' in any "
                       "layout: torchtitan's llama3 has no flavor of this shape"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("search: "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(titan));
  // No launcher trains an MLP: --launchable says so, and writes nothing.
  const std::string mlp = (dir / "mlp.json").string();
  r = run_cli("optimize mnist-mlp --machine dgx-h100 --gpus 4 --launchable --out " + mlp);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--launchable: 'mnist-mlp' is not a decoder-only transformer"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(mlp));
  fs::remove_all(dir);
}

// `--progress` on dlrm: the best whole plan it reports never rises (each lineage of the search
// has its own best, and the plan takes two searches), a piece's lines (when the graph is split)
// say they give that piece's best, and the plan is at least as fast as the last best reported.
TEST(OptimizeCli, ProgressNeverReportsAWholePlanBestThatRises) {
  const auto r = run_cli("optimize dlrm --machine summit --nodes 2 --progress --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex best_plan(R"(best plan ([0-9.]+) ms)");
  std::vector<double> bests;
  int searches = 0;
  std::string last;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("search: ", 0) != 0) continue;
    last = line;
    std::smatch m;
    if (std::regex_search(line, m, best_plan)) bests.push_back(std::stod(m[1]));
    if (line.find("search: piece ") == 0 && line.find("step") != std::string::npos) {
      EXPECT_NE(line.find("this piece's best"), std::string::npos) << line;
    }
    if (line.find("| its start on one device") != std::string::npos) ++searches;
  }
  ASSERT_FALSE(bests.empty()) << r.err;
  for (std::size_t i = 1; i < bests.size(); ++i)
    EXPECT_LE(bests[i], bests[i - 1]) << "line " << i << " of:\n" << r.err;
  // The joint search runs from the model, then from its algebraic rewrites; each names itself.
  EXPECT_EQ(searches, 2) << r.err;
  EXPECT_NE(r.err.find("search: joint search from the algebraic rewrites"), std::string::npos);
  EXPECT_EQ(last.find("search: done"), 0u) << last;
  // The plan is the best of the searches and the baselines beside them.
  const double plan_ms = nlohmann::json::parse(r.out)["iteration_time_ms"].get<double>();
  EXPECT_LE(plan_ms, bests.back() + 1e-3);
}

// The experts' load and the FLOP count from the command line: a capacity factor costs the
// experts and all-to-alls padded to it and travels in the plan; --flop-count causal lowers the
// reported TFLOP/s and leaves the time; out-of-range values exit 1 naming the flag.
TEST(OptimizeCli, ExpertLoadAndFlopCountFlags) {
  const std::string layout =
      "optimize moe-tiny --machine dgx-h100 --gpus 8 --mode expert --tp 1 --pp 1 --ep 4 --json";
  auto dropless = run_cli(layout);
  auto capped = run_cli(layout + " --moe-expert-capacity-factor 1.5 --flop-count causal");
  ASSERT_EQ(dropless.exit_code, 0) << dropless.err;
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  const auto a = nlohmann::json::parse(dropless.out), b = nlohmann::json::parse(capped.out);
  EXPECT_NEAR(b["alltoall_bytes"].get<double>() / a["alltoall_bytes"].get<double>(), 1.5, 1e-9);
  EXPECT_GT(b["iteration_time_ms"].get<double>(), a["iteration_time_ms"].get<double>());
  EXPECT_EQ(a["flop_count"], "full");
  EXPECT_EQ(b["flop_count"], "causal");
  // --etp fixes the experts' tensor parallelism: 1 (each expert whole) or --tp (each split as a
  // dense MLP is); another degree exits 1 saying which it takes.
  auto etp1 = run_cli(layout + " --etp 1");
  ASSERT_EQ(etp1.exit_code, 0) << etp1.err;
  EXPECT_EQ(nlohmann::json::parse(etp1.out)["etp"], 1);
  const std::string tp2 =
      "optimize moe-tiny --machine dgx-h100 --gpus 8 --mode expert --tp 2 --pp 1 --json";
  auto etp2 = run_cli(tp2 + " --etp 2 --ep 2");
  ASSERT_EQ(etp2.exit_code, 0) << etp2.err;
  const auto e2 = nlohmann::json::parse(etp2.out);
  EXPECT_EQ(e2["etp"], 2);
  EXPECT_EQ(e2["ep"], 2);
  EXPECT_EQ(e2["edp"], 2);  // tp 2 x dp 4 = etp 2 x ep 2 x edp 2
  auto etp4 = run_cli(tp2 + " --etp 4");
  EXPECT_EQ(etp4.exit_code, 1);
  EXPECT_NE(etp4.err.find("--etp 4: Unity plans expert tensor parallelism of 1 or --tp (2)"),
            std::string::npos)
      << etp4.err;
  EXPECT_LT(b["model_flops_per_iteration"].get<double>(),
            a["model_flops_per_iteration"].get<double>());

  // Megatron-Core's recomputation modules: named, they ask for selective recomputation and
  // travel in the JSON; an unknown one, or one beside another level, exits 1 naming it.
  auto modules = run_cli(layout + " --recompute-modules moe_act,layernorm");
  ASSERT_EQ(modules.exit_code, 0) << modules.err;
  const auto m = nlohmann::json::parse(modules.out);
  EXPECT_EQ(m["recompute"], "selective");
  EXPECT_EQ(m["recompute_modules"], "layernorm,moe_act");
  auto kept = run_cli(layout + " --recompute none");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  const auto none = nlohmann::json::parse(kept.out);
  EXPECT_EQ(none["recompute_modules"], "");
  EXPECT_GT(m["iteration_time_ms"].get<double>(), none["iteration_time_ms"].get<double>());
  EXPECT_LT(m["peak_memory_bytes"].get<double>(), none["peak_memory_bytes"].get<double>());
  auto unknown = run_cli(layout + " --recompute-modules layernorm,mlp_act");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown recomputation module 'mlp_act'"), std::string::npos)
      << unknown.err;
  auto empty = run_cli(layout + " --recompute-modules ','");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("no module named"), std::string::npos) << empty.err;
  auto clash = run_cli(layout + " --recompute full --recompute-modules moe");
  EXPECT_EQ(clash.exit_code, 1);
  EXPECT_NE(clash.err.find("needs --recompute selective"), std::string::npos) << clash.err;

  auto low = run_cli(layout + " --moe-load-imbalance 0.5");
  EXPECT_EQ(low.exit_code, 1);
  EXPECT_NE(low.err.find("--moe-load-imbalance"), std::string::npos) << low.err;
  auto count = run_cli(layout + " --flop-count half");
  EXPECT_EQ(count.exit_code, 1);
  EXPECT_NE(count.err.find("--flop-count"), std::string::npos) << count.err;
}

// Node-limited routing as a what-if on any MoE model (Megatron-LM's --moe-router-num-groups and
// --moe-router-group-topk): Qwen3-30B-A3B's 128 experts over EP 16 on two DGX H100 nodes, in 2
// groups (one a node) of which a token keeps 1, send DeepEP fewer bytes; groups that do not
// divide the experts, that keep fewer than the top 8, or a model without experts exit 1 naming
// the problem.
TEST(OptimizeCli, RouterGroupsLimitWhereTokensGo) {
  const std::string layout =
      "optimize qwen3-30b-a3b --layers 2 --seq 256 --machine dgx-h100 --gpus 16 --mode expert "
      "--tp 1 --pp 1 --ep 16 --dispatcher deepep --json";
  auto free = run_cli(layout);
  auto limited = run_cli(layout + " --moe-router-num-groups 2 --moe-router-group-topk 1");
  ASSERT_EQ(free.exit_code, 0) << free.err;
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  const auto a = nlohmann::json::parse(free.out), b = nlohmann::json::parse(limited.out);
  EXPECT_LT(b["alltoall_bytes"].get<double>(), 0.9 * a["alltoall_bytes"].get<double>());
  EXPECT_LT(b["iteration_time_ms"].get<double>(), a["iteration_time_ms"].get<double>());
  auto uneven = run_cli(layout + " --moe-router-num-groups 3 --moe-router-group-topk 1");
  EXPECT_EQ(uneven.exit_code, 1);
  EXPECT_NE(uneven.err.find("3 route groups do not divide its 128 experts"), std::string::npos)
      << uneven.err;
  auto narrow = run_cli(layout + " --moe-router-num-groups 64 --moe-router-group-topk 2");
  EXPECT_EQ(narrow.exit_code, 1);
  EXPECT_NE(narrow.err.find("2 of 64 groups keep 4 experts, fewer than the 8"), std::string::npos)
      << narrow.err;
  auto dense = run_cli(
      "optimize gpt-tiny --machine dgx-h100 --gpus 2 --moe-router-num-groups 2 "
      "--moe-router-group-topk 1");
  EXPECT_EQ(dense.exit_code, 1);
  EXPECT_NE(dense.err.find("has no mixture-of-experts layer"), std::string::npos) << dense.err;
}
