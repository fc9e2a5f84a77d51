// Every published Hugging Face config in models/hf (one per architecture Unity reads) plans on a
// DGX H100 node with Megatron-LM's layout and exports to each of the three frameworks, or is
// refused by one with what it cannot express (issue: a config.json in, a launch out).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "launch_test_helpers.h"
#include "unity/core/errors.h"
#include "unity/core/hf/hf_config.h"
#include "unity/core/hf/hf_model.h"
#include "unity/core/json_io.h"
#include "unity/core/launch/export_launch.h"
#include "unity/core/launch/launch_writers.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/model_shape.h"
#include "unity/core/plan/plan.h"
#include "unity/core/plan/plan_optimizer.h"

using namespace unity;
using namespace unity::launch;

namespace {

namespace fs = std::filesystem;

// The largest tensor-parallel degree of a node that divides the heads and the KV heads.
int megatron_tp(const hf::HfConfig& c) {
  for (int tp : {8, 4, 2})
    if (c.heads % tp == 0 && c.kv_heads % tp == 0) return tp;
  return 1;
}

}  // namespace

TEST(HfConfigExport, EveryPublishedConfigPlansAndExportsOrSaysWhy) {
  const fs::path root = fs::path(UNITY_SOURCE_DIR) / "models" / "hf";
  std::set<std::string> architectures;
  std::set<std::string> megatron;  // the architectures Megatron-LM's export wrote
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "config.json")) continue;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    const hf::HfConfig config = hf::read_hf_config(path);
    architectures.insert(config.architecture);
    zoo::TransformerResize resize;
    // 4,096 tokens where the model's positions reach that far (GPT-2's learned ones stop at 1,024).
    if (!config.learned_positions || config.max_positions >= 4096) resize.seq = 4096;
    const Graph model = load_model_for_devices(path, 8, 32, resize);
    OptimizeOptions o;
    o.mode = "expert";
    o.layout.tensor_parallel = megatron_tp(config);
    o.layout.pipeline_stages = 1;
    o.layout.zero_stage = 1;
    Plan plan =
        plan_from_json(plan_to_json(optimize_plan(model, load_machine("dgx-h100", {0, 8}), o)));
    ASSERT_TRUE(plan.summary.model_shape) << "no model shape for " << config.architecture;
    add_hf_details(*plan.summary.model_shape, config);
    for (Framework f : {Framework::Megatron, Framework::Torchtitan, Framework::DeepSpeed}) {
      try {
        const ExportResult r = export_launch(plan, {f, false});
        launch_test::expect_known_names(r.file);
        if (f == Framework::Megatron) megatron.insert(config.architecture);
        std::printf("%-26s %-10s written\n", config.architecture.c_str(),
                    std::string(display_name(f)).c_str());
      } catch (const InputError& e) {
        const std::string why = e.what();
        EXPECT_NE(why.find("cannot"), std::string::npos) << why;
        std::printf("%-26s %-10s refused: %.150s\n", config.architecture.c_str(),
                    std::string(display_name(f)).c_str(), why.c_str());
      }
    }
  }
  // Every architecture the reader knows has its published config here.
  for (const char* a : {"LlamaForCausalLM",    "MistralForCausalLM",   "Qwen2ForCausalLM",
                        "Qwen3ForCausalLM",    "Gemma2ForCausalLM",    "Gemma3ForCausalLM",
                        "Phi3ForCausalLM",     "GPT2LMHeadModel",      "GPTNeoXForCausalLM",
                        "MixtralForCausalLM",  "Qwen3MoeForCausalLM",  "DeepseekV3ForCausalLM",
                        "GptOssForCausalLM",   "GemmaForCausalLM",     "Starcoder2ForCausalLM",
                        "Qwen2MoeForCausalLM", "OlmoeForCausalLM",     "PhiMoEForCausalLM",
                        "Olmo2ForCausalLM",    "GraniteForCausalLM",   "Glm4MoeForCausalLM",
                        "Llama4ForCausalLM",   "MiniMaxM2ForCausalLM", "SmolLM3ForCausalLM"})
    EXPECT_TRUE(architectures.count(a)) << a;
  // Megatron-LM's pretrain_gpt.py runs the Llama-like decoders (SmolLM3's NoPE layers by
  // --no-rope-freq), GPT-2, the MoE ones and the latent attention; the rest are refused naming what
  // its layers lack (Gemma's GeGLU and extra norms, NeoX's parallel residual, gpt-oss's and
  // Phi-3.5-MoE's attention-only biases, OLMoE's q/k norms over whole projections, Qwen2-MoE's gate
  // on its shared expert, OLMo 2's norms after its blocks, Granite's multipliers).
  EXPECT_EQ(megatron, (std::set<std::string>{
                          "DeepseekV3ForCausalLM", "GPT2LMHeadModel", "Glm4MoeForCausalLM",
                          "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM",
                          "Phi3ForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                          "Qwen3MoeForCausalLM", "SmolLM3ForCausalLM", "Starcoder2ForCausalLM"}));
}

namespace {

// A config's model (its sequence and layer count as given, 0: the config's) planned on one DGX
// H100 node with Megatron-LM's tp 2 and the experts over 8 devices, its Hugging Face details added
// and carried through the plan file as `unity export` reads them.
Plan expert_plan_of(const hf::HfConfig& config, std::int64_t seq, std::int64_t layers = 0) {
  zoo::TransformerResize resize;
  resize.seq = seq;
  resize.layers = layers;
  const Graph model = hf::build_hf_model(config, 64, resize);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 2;
  o.layout.pipeline_stages = 1;
  o.layout.expert_parallel = 8;
  Plan plan = optimize_plan(model, load_machine("dgx-h100", {0, 8}), o);
  add_hf_details(*plan.summary.model_shape, config);
  return plan_from_json(plan_to_json(plan));
}

}  // namespace

// GLM-4.5-Air rotates half of each head (partial_rotary_factor 0.5): Megatron-LM says so with
// --rotary-percent, with its q/k/v biases, sigmoid router with its score correction, shared expert
// and first dense layer; Megatron-DeepSpeed, which rotates whole heads, refuses naming the
// fraction.
TEST(HfConfigExport, Glm45AirsPartialRotationAndRouterReachMegatron) {
  const Plan plan = expert_plan_of(
      hf::read_hf_config(std::string(UNITY_SOURCE_DIR) + "/models/hf/GLM-4.5-Air"), 4096);
  const std::string file = export_launch(plan, {Framework::Megatron, false}).file.text;
  for (const char* flag :
       {"--rotary-percent 0.5", "--add-qkv-bias", "--moe-router-score-function sigmoid",
        "--moe-router-enable-expert-bias", "--moe-shared-expert-intermediate-size 1408",
        "--moe-layer-freq \"([0]*1+[1]*45)\"", "--num-experts 128", "--moe-router-topk 8"})
    EXPECT_NE(file.find(flag), std::string::npos) << flag;
  try {
    export_launch(plan, {Framework::DeepSpeed, false});
    ADD_FAILURE() << "DeepSpeed wrote it";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rotates every dimension of a head, not 0.5"),
              std::string::npos)
        << e.what();
  }
}

// Llama 4 Scout: Megatron-LM's --use-rope-scaling fixes Llama 3.1's frequency factors (high 4),
// so Scout's (high 1) is refused naming it; with Llama 3.1's the launch says the rest of what Scout
// is: the factor 16, every 4th layer without rotary, q and k L2-normalised, the gate on the
// experts' input, a shared expert as wide as the routed ones; at 8,192 tokens a chunk is the whole
// sequence, and at 16,384 chunked attention is refused.
TEST(HfConfigExport, Llama4ScoutReachesMegatronOrSaysWhy) {
  const std::string path = std::string(UNITY_SOURCE_DIR) + "/models/hf/Llama-4-Scout-17B-16E";
  auto plan_of = [](const hf::HfConfig& config, std::int64_t seq) {
    return expert_plan_of(config, seq, 8);
  };
  const hf::HfConfig scout = hf::read_hf_config(path);
  try {
    export_launch(plan_of(scout, 8192), {Framework::Megatron, false});
    ADD_FAILURE() << "written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("high_freq_factor 1"), std::string::npos) << e.what();
  }
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path + "/config.json"));
  j["text_config"]["rope_scaling"]["high_freq_factor"] = 4.0;
  const hf::HfConfig llama31_rope = hf::parse_hf_config(j, "scout", "scout");
  const std::string file =
      export_launch(plan_of(llama31_rope, 8192), {Framework::Megatron, false}).file.text;
  for (const char* flag :
       {"--use-rope-scaling", "--rope-scaling-factor 16", "--no-rope-freq 4", "--qk-l2-norm",
        "--moe-apply-probs-on-input", "--num-experts 16", "--moe-router-topk 1",
        "--moe-shared-expert-intermediate-size 8192", "--moe-router-score-function sigmoid"})
    EXPECT_NE(file.find(flag), std::string::npos) << flag;
  try {
    export_launch(plan_of(llama31_rope, 16384), {Framework::Megatron, false});
    ADD_FAILURE() << "written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no chunked attention (attention_chunk_size 8192)"),
              std::string::npos)
        << e.what();
  }
}

// What only a Hugging Face config says (Llama 3.1's rotary base and rope scaling) travels with the
// graph built from it: a model stored as JSON (a project's, a plan's PCG) and planned without the
// config (the explorer, `unity compare`) still exports it; the same graph without those details
// exports Megatron-LM's defaults.
TEST(HfConfigExport, TheConfigsDetailsTravelWithItsGraph) {
  zoo::TransformerResize resize;
  resize.seq = 4096;
  resize.layers = 4;
  const Graph built = load_model_for_devices(
      (fs::path(UNITY_SOURCE_DIR) / "models" / "hf" / "Llama-3.1-8B").string(), 8, 32, resize);
  ASSERT_FALSE(built.source_details.empty());
  const Graph stored = graph_from_json(graph_to_json(built));
  EXPECT_EQ(stored.source_details, built.source_details);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 8;
  o.layout.pipeline_stages = 1;
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  const auto megatron_args = [&](const Graph& g) {
    return launch_test::script_args(
        export_launch(optimize_plan(g, machine, o), {Framework::Megatron, false}).file.text);
  };
  const auto args = megatron_args(stored);
  EXPECT_EQ(args.at("--rotary-base"), "500000");
  EXPECT_TRUE(args.count("--use-rope-scaling"));
  Graph bare = stored;
  bare.source_details.clear();
  const auto defaults = megatron_args(bare);
  EXPECT_FALSE(defaults.count("--use-rope-scaling"));
  EXPECT_NE(defaults.count("--rotary-base") ? defaults.at("--rotary-base") : "", "500000");
}
