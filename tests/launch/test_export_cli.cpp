// `unity export` as a user runs it: a Hugging Face config planned and exported to torchtitan, a
// plan no framework runs refused with exit 1 and nothing written, --nearest printing both costs,
// and Megatron-LM's rules named when a plan breaks one.
#include <filesystem>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../app/cli_runner.h"
#include "launch_test_helpers.h"

namespace fs = std::filesystem;

TEST(ExportCli, LlamaConfigToTorchtitanToml) {
  Folder dir("export_llama3");
  const std::string config = std::string(UNITY_SOURCE_DIR) + "/models/hf/Llama-3.1-8B";
  auto r = run_cli("optimize " + config +
                   " --machine dgx-h100 --gpus 64 --seq 8192 --batch 512 --mode expert --out " +
                   dir / "plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("export " + dir / "plan.json" + " --to torchtitan -o " + dir / "llama3_8b.toml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  auto keys = launch_test::toml_keys(slurp(dir / "llama3_8b.toml"));
  EXPECT_EQ(keys["model.name"], "\"llama3\"");
  EXPECT_EQ(keys["model.flavor"], "\"8B\"");
  EXPECT_EQ(keys["model.hf_assets_path"], "\"./assets/hf/Llama-3.1-8B\"");
  EXPECT_EQ(keys["training.seq_len"], "8192");
  EXPECT_EQ(keys["training.global_batch_size"], "512");
  EXPECT_EQ(keys["training.mixed_precision_param"], "\"bfloat16\"");
  const int tp = std::stoi(keys["parallelism.tensor_parallel_degree"]);
  const int pp = std::stoi(keys["parallelism.pipeline_parallel_degree"]);
  const int dp = std::stoi(keys["parallelism.data_parallel_shard_degree"]) *
                 std::stoi(keys["parallelism.data_parallel_replicate_degree"]);
  EXPECT_EQ(tp * pp * dp, 64);
  // The same plan to Megatron-LM: the config's rope and grouped-query attention.
  r = run_cli("export " + dir / "plan.json" + " --to megatron");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto args = launch_test::script_args(r.out);
  EXPECT_EQ(args["--num-query-groups"], "8");
  EXPECT_EQ(args["--rotary-base"], "500000");
  EXPECT_TRUE(args.count("--use-rope-scaling"));
  EXPECT_EQ(args["--tokenizer-type"], "HuggingFaceTokenizer");
  EXPECT_EQ(args["--max-position-embeddings"], "131072");
}

TEST(ExportCli, JointMnistMlpPlanIsRefusedAndNothingWritten) {
  Folder dir("export_mnist");
  auto r = run_cli("optimize mnist-mlp --machine dgx-a100 --gpus 4 --budget 10 --out " +
                   dir / "plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* to : {"megatron", "torchtitan", "deepspeed"}) {
    r = run_cli("export " + dir / "plan.json" + " --to " + to + " -o " + dir / "out");
    EXPECT_EQ(r.exit_code, 1) << to;
    EXPECT_NE(r.err.find("not a decoder-only transformer"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
    EXPECT_TRUE(r.out.empty());
  }
  r = run_cli("export " + dir / "plan.json" + " --to megatron --nearest");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
}

TEST(ExportCli, NearestPrintsBothCosts) {
  Folder dir("export_nearest");
  auto r = run_cli(
      "optimize llama-tiny --layers 4 --batch 32 --machine dgx-a100 --gpus 8 --mode expert "
      "--tp 2 --pp 2 --interleave 2 --micro-batches 4 --out " +
      dir / "plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("export " + dir / "plan.json" + " --to deepspeed -o " + dir / "ds.sh");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no interleaved schedule"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--nearest"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ds.sh"));
  r = run_cli("export " + dir / "plan.json" + " --to deepspeed --nearest -o " + dir / "ds.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the plan"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nearest for DeepSpeed"), std::string::npos) << r.err;
  const auto args = launch_test::script_args(slurp(dir / "ds.sh"));
  EXPECT_EQ(args.at("--tensor-model-parallel-size"), "2");
  EXPECT_EQ(args.at("--pipeline-model-parallel-size"), "2");
}

TEST(ExportCli, MegatronRuleBrokenIsNamed) {
  Folder dir("export_rule");
  auto r = run_cli(
      "optimize llama-tiny --batch 32 --machine dgx-a100 --gpus 8 --mode expert --tp 2 --pp 1 "
      "--out " +
      dir / "plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A model shape whose KV heads TP 2 does not divide.
  auto j = nlohmann::json::parse(slurp(dir / "plan.json"));
  j["summary"]["model_shape"]["kv_heads"] = 1;
  std::ofstream(dir / "bad.json") << j.dump();
  r = run_cli("export " + dir / "bad.json" + " --to megatron -o " + dir / "out.sh");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rule 'TP divides the KV heads (query groups)'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.sh"));
  r = run_cli("export " + dir / "plan.json" + " --to megatron -o " + dir / "out.sh");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "out.sh"));
}

// A DeepSeek-shaped MoE plan with EP fixed exports to Megatron-LM with its experts and latent
// attention; DeepSpeed refuses it naming what it cannot express, exit 1, nothing written.
TEST(ExportCli, MixtureOfExpertsPlan) {
  Folder dir("export_moe");
  auto r = run_cli(
      "optimize deepseek-tiny --batch 32 --machine dgx-h100 --gpus 8 --mode expert --tp 2 --pp 1 "
      "--ep 4 --dispatcher deepep --out " +
      dir / "plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("export " + dir / "plan.json" + " --to megatron -o " + dir / "moe.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto args = launch_test::script_args(slurp(dir / "moe.sh"));
  EXPECT_EQ(args.at("--num-experts"), "4");
  EXPECT_EQ(args.at("--moe-router-topk"), "2");
  EXPECT_EQ(args.at("--moe-ffn-hidden-size"), "32");
  EXPECT_EQ(args.at("--expert-model-parallel-size"), "4");
  EXPECT_EQ(args.at("--moe-token-dispatcher-type"), "flex");
  EXPECT_TRUE(args.count("--moe-enable-deepep"));
  EXPECT_TRUE(args.count("--multi-latent-attention"));
  r = run_cli("export " + dir / "plan.json" + " --to deepspeed -o " + dir / "ds.sh");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no multi-head latent attention"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not DeepEP"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ds.sh"));
}
