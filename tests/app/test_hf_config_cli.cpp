// A Hugging Face config.json as the MODEL of `unity show` and `unity optimize`: the published
// configs in models/hf/ and small ones written for the tests (tests/data/hf/); unknown,
// truncated configs exit 1 with the reason and write nothing.
#include <gtest/gtest.h>
#include <unistd.h>

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
