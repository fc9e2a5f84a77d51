// A Hugging Face config.json as the MODEL of `unity show` and `unity optimize`: the published
// configs in models/hf/ and small ones written for the tests (tests/data/hf/); unknown,
// truncated configs exit 1 with the reason and write nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

std::string published(const std::string& name) {
  return std::string(UNITY_SOURCE_DIR) + "/models/hf/" + name;
}
std::string test_config(const std::string& name) {
  return std::string(UNITY_TEST_DATA_DIR) + "/hf/" + name + "/config.json";
}

}  // namespace

TEST(HfConfigCli, ShowReadsTheFileOrItsFolder) {
  auto gpt2 = run_cli("show " + published("gpt2") + "/config.json --json");
  ASSERT_EQ(gpt2.exit_code, 0) << gpt2.err;
  const auto g = nlohmann::json::parse(gpt2.out);
  EXPECT_EQ(g["name"], "gpt2");
  // 124,439,808 less c_attn's biases (12 x 3 x 768), which MultiHeadAttention does not hold.
  EXPECT_EQ(g["parameters"], 124439808 - 12 * 3 * 768);

  auto llama = run_cli("show " + published("Llama-3.1-8B") + " --seq 4096 --json");
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  const auto l = nlohmann::json::parse(llama.out);
  EXPECT_EQ(l["name"], "Llama-3.1-8B[seq=4096]");
  EXPECT_EQ(l["parameters"], 8030261248);

  // DeepSeek-V3 with its latent attention: 671B, less the routers' 58 x 256 score corrections.
  auto deepseek = run_cli("show " + published("DeepSeek-V3") + " --seq 64 --json");
  ASSERT_EQ(deepseek.exit_code, 0) << deepseek.err;
  EXPECT_EQ(nlohmann::json::parse(deepseek.out)["parameters"], 671026419200 - 58 * 256);
}

TEST(HfConfigCli, OptimizePlansASmallConfig) {
  auto r = run_cli("optimize " + test_config("tiny-llama") + " --machine dgx-h100 --gpus 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "tiny-llama");
  EXPECT_EQ(j["devices"], 2);
  EXPECT_EQ(j["dtype"], "bfloat16");
}

// The text report says the size planned: a config's default sequence is its longest, and the
// line says where it came from until --seq gives one.
TEST(HfConfigCli, OptimizeSaysTheSequenceItPlanned) {
  auto r = run_cli("optimize " + test_config("tiny-llama") + " --machine dgx-h100 --gpus 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  model          2 layers, hidden 64, 4 heads (2 key/value), sequence 32 "
                       "(the config's max_position_embeddings; --seq sets the length you train "
                       "at), global batch 2\n"),
            std::string::npos)
      << r.out;
  auto given = run_cli("optimize " + test_config("tiny-llama") +
                       " --machine dgx-h100 --gpus 2 --seq 16 --batch 8");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.out.find("sequence 16, global batch 8\n"), std::string::npos) << given.out;
}

TEST(HfConfigCli, BadConfigsExitOneAndWriteNothing) {
  const auto out = fs::temp_directory_path() / (std::to_string(::getpid()) + "_hf_never.json");
  auto unknown = run_cli("optimize " + test_config("unknown-architecture") +
                         " --machine cpu-local --gpus 2 --out " + out.string());
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("FalconForCausalLM"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("LlamaForCausalLM, MistralForCausalLM"), std::string::npos)
      << unknown.err;
  EXPECT_FALSE(fs::exists(out));

  auto truncated = run_cli("optimize " + test_config("truncated") +
                           " --machine cpu-local --gpus 2 --out " + out.string());
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find("not valid JSON"), std::string::npos) << truncated.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(run_cli("show " + test_config("truncated")).exit_code, 1);

  auto resized = run_cli("show " + test_config("tiny-llama") + " --hidden 128");
  EXPECT_EQ(resized.exit_code, 1);
  EXPECT_NE(resized.err.find("hidden_size"), std::string::npos) << resized.err;
}

// DeepSeek-V3's config scales its latent attention's rotary embeddings by YaRN (factor 40, mscale
// 1, mscale_all_dim 1; original 4,096 positions, beta 32 and 1, Megatron-LM's own defaults): the
// Megatron-LM export writes them. A config whose YaRN Megatron-LM cannot take is refused naming
// the field, nothing written.
TEST(HfConfigCli, DeepSeekV3YarnExportsToMegatron) {
  const auto dir = fs::temp_directory_path() / (std::to_string(::getpid()) + "_hf_yarn");
  fs::create_directories(dir);
  const std::string plan = (dir / "plan.json").string();
  const std::string layout =
      " --machine dgx-h100 --nodes 128 --batch 8192 --dtype fp8 --mode expert --tp 2 --pp 8 "
      "--interleave 4 --micro-batches 128 --ep 64 --dispatcher deepep --zero 1 "
      "--overlap-grad-reduce --recompute none --sequence-parallel --tp-comm-overlap "
      "--pin fuse_attention --pin fuse_latent_attention --out ";
  auto r = run_cli("optimize " + published("DeepSeek-V3") + layout + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto e = run_cli("export " + plan + " --to megatron");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  for (const char* arg : {"--rope-type yarn", "--rotary-scaling-factor 40", "--mscale 1\n",
                          "--mscale-all-dim 1", "--rotary-base 10000"})
    EXPECT_NE(e.out.find(arg), std::string::npos) << arg << "\n" << e.out;
  EXPECT_EQ(e.out.find("--no-rope-fusion"), std::string::npos);

  nlohmann::json config =
      nlohmann::json::parse(std::ifstream(published("DeepSeek-V3") + "/config.json"));
  config["rope_scaling"]["beta_fast"] = 16;
  fs::create_directories(dir / "beta16");
  std::ofstream(dir / "beta16" / "config.json") << config.dump();
  const std::string plan16 = (dir / "plan16.json").string();
  r = run_cli("optimize " + (dir / "beta16").string() + layout + plan16);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out16 = (dir / "launch16.sh").string();
  e = run_cli("export " + plan16 + " --to megatron -o " + out16);
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("YaRN's beta_fast 16"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(out16));
  fs::remove_all(dir);
}

// Sliding-window attention reaches Megatron-LM: a Mistral-shaped config whose layer_types
// alternate windowed and full layers plans each windowed attention with its window (costed by
// the blocks inside it) and exports --window-size (the keys before the query: 63 for Hugging
// Face's 64) and the per-layer list of windowed layers.
TEST(HfConfigCli, SlidingWindowLayersExportToMegatron) {
  const auto dir = fs::temp_directory_path() / (std::to_string(::getpid()) + "_hf_window");
  fs::create_directories(dir / "model");
  nlohmann::json config = {
      {"architectures", {"MistralForCausalLM"}},
      {"hidden_size", 256},
      {"intermediate_size", 512},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 2},
      {"num_hidden_layers", 4},
      {"vocab_size", 1024},
      {"sliding_window", 64},
      {"layer_types",
       {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}},
      {"torch_dtype", "bfloat16"}};
  std::ofstream(dir / "model" / "config.json") << config.dump();
  const std::string plan = (dir / "plan.json").string();
  auto r = run_cli("optimize " + (dir / "model").string() +
                   " --seq 256 --machine dgx-h100 --gpus 8 --batch 8 --mode expert --tp 2 --pp 1 "
                   "--pin fuse_attention --out " +
                   plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto p = nlohmann::json::parse(std::ifstream(plan));
  std::vector<std::int64_t> windows;
  for (const auto& n : p["pcg"]["nodes"])
    if (n.value("op", "") == "MultiHeadAttention")
      windows.push_back(n["attrs"].value("window", std::int64_t{0}));
  EXPECT_EQ(windows, (std::vector<std::int64_t>{64, 0, 64, 0}));
  auto e = run_cli("export " + plan + " --to megatron");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("--window-size 63,0"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("--window-attn-skip-freq \"([1]*1+[0]*1+[1]*1+[0]*1)\""), std::string::npos)
      << e.out;

  // With context parallelism, Transformer Engine all-gathers a windowed attention's keys and values
  // (its context_parallel.py refuses the ring): a launchable plan takes the all-gather, a plan that
  // rings them is not launched as it is, and the nearest launch all-gathers.
  const std::string base = "optimize " + (dir / "model").string() +
                           " --seq 256 --machine dgx-h100 --gpus 8 --batch 8 --mode expert --tp 1 "
                           "--pp 1 --cp 2 --pin fuse_attention ";
  r = run_cli(base + "--launchable --out " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(plan))["pipeline"]["cp_comm"], "all_gather");
  e = run_cli("export " + plan + " --to megatron");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("--cp-comm-type all_gather"), std::string::npos) << e.out;
  r = run_cli(base + "--launchable --cp-comm p2p");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("takes only by all-gathering the keys and values"), std::string::npos)
      << r.err;
  r = run_cli(base + "--cp-comm p2p --out " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Megatron-LM does not: Transformer Engine's context parallelism takes a "
                       "sliding window only by all-gathering"),
            std::string::npos)
      << r.out;
  e = run_cli("export " + plan + " --to megatron");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("not by the plan's ring (p2p)"), std::string::npos) << e.err;
  e = run_cli("export " + plan + " --to megatron --nearest");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("--cp-comm-type all_gather"), std::string::npos) << e.out;
  fs::remove_all(dir);
}
