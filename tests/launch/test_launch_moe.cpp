// Mixture-of-experts and latent-attention plans exported (core/src/launch): the MoE and MLA shape
// read off the graph is the published config's, the published Qwen3-235B-A22B and DeepSeek-V3
// layouts become Megatron-LM's MoE, MLA and expert-parallel flags value by value, torchtitan gets
// its MoE flavor and expert-parallel keys, Megatron-DeepSpeed its MoE flags, and what a framework
// cannot express is refused naming it (or, with nearest, replaced by a layout it runs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../moe_runs.h"
#include "launch_test_helpers.h"
#include "unity/core/errors.h"
#include "unity/core/launch/export_launch.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"

using namespace unity;
using namespace unity::launch;
using launch_test::expect_known_names;
using launch_test::script_args;
using launch_test::toml_keys;

namespace {

Plan moe_round_trip(const Plan& p) { return plan_from_json(plan_to_json(p)); }

// A small MoE member planned on `gpus` H100s with TP, PP and EP fixed.
Plan small_moe_plan(const std::string& model, int gpus, int tp, int pp, int ep,
                    TokenDispatcher dispatcher = TokenDispatcher::AllToAll) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = tp;
  o.layout.pipeline_stages = pp;
  o.layout.interleave = 1;
  o.layout.expert_parallel = ep;
  o.layout.dispatcher = dispatcher;
  return moe_round_trip(optimize_plan(load_model_for_devices(model, gpus, 32),
                                      load_machine("dgx-h100", {0, gpus}), o));
}

std::string moe_refusal(const Plan& plan, Framework f) {
  try {
    export_launch(plan, {f, false});
  } catch (const InputError& e) {
    return e.what();
  }
  return "exported";
}

}  // namespace

// gpt-oss-120b's windows as its model shape reads them off the attentions (what the export
// writes): 128 tokens on every other layer, the first included.
TEST(MoeModelShape, GptOssWindowsReadOffItsAttentions) {
  const auto m = model_shape_of(load_model_for_devices("gpt-oss-120b", 1, 1));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->sliding_window, 128);
  ASSERT_EQ(m->window_layers.size(), 36u);
  for (std::size_t i = 0; i < 36; ++i) EXPECT_EQ(m->window_layers[i], i % 2 == 0 ? 1 : 0) << i;
  const ModelShape back = model_shape_from_json(model_shape_to_json(*m));
  EXPECT_EQ(back.sliding_window, 128);
  EXPECT_EQ(back.window_layers, m->window_layers);
}

// DeepSeek-V3's shape as its config.json publishes it: 256 routed experts of 2,048, top 8, one
// shared expert, the first 3 of 61 layers dense (18,432 wide), sigmoid scores renormalised, and
// latent attention with q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
// qk_rope_head_dim 64, v_head_dim 128.
TEST(MoeModelShape, DeepSeekV3AsPublished) {
  const auto m = model_shape_of(load_model_for_devices("deepseek-v3", 1, 1));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->layers, 61);
  EXPECT_EQ(m->hidden, 7168);
  EXPECT_EQ(m->heads, 128);
  EXPECT_EQ(m->ffn, 18432);
  EXPECT_EQ(m->vocab, 129280);
  ASSERT_TRUE(m->moe);
  EXPECT_EQ(m->moe->experts, 256);
  EXPECT_EQ(m->moe->top_k, 8);
  EXPECT_EQ(m->moe->expert_ffn, 2048);
  EXPECT_EQ(m->moe->shared_ffn, 2048);
  EXPECT_EQ(m->moe->dense_layers(), 3);
  EXPECT_EQ(m->moe->layer_freq(), "([0]*3+[1]*58)");
  EXPECT_TRUE(m->moe->sigmoid);
  EXPECT_TRUE(m->moe->normalize_top_k);
  EXPECT_TRUE(m->moe->gated);
  EXPECT_EQ(m->moe->route_groups, 8);  // n_group, topk_group
  EXPECT_EQ(m->moe->route_group_top_k, 4);
  EXPECT_TRUE(m->gated_mlp);
  EXPECT_EQ(m->activation, "silu");
  ASSERT_TRUE(m->mla);
  EXPECT_EQ(m->mla->q_lora_rank, 1536);
  EXPECT_EQ(m->mla->kv_lora_rank, 512);
  EXPECT_EQ(m->mla->qk_head_dim, 128);
  EXPECT_EQ(m->mla->qk_rope_head_dim, 64);
  EXPECT_EQ(m->mla->v_head_dim, 128);
}

// Every layer with experts and no dense width of its own (Qwen3-MoE, Mixtral): ffn is the
// experts', the layer pattern "1"; softmax routers renormalised over the picked.
TEST(MoeModelShape, Qwen3AndMixtral) {
  const auto q = model_shape_of(load_model_for_devices("qwen3-235b-a22b", 1, 1));
  ASSERT_TRUE(q && q->moe);
  EXPECT_EQ(q->layers, 94);
  EXPECT_EQ(q->kv_heads, 4);
  EXPECT_EQ(q->head_dim, 128);
  EXPECT_EQ(q->moe->experts, 128);
  EXPECT_EQ(q->moe->top_k, 8);
  EXPECT_EQ(q->moe->expert_ffn, 1536);
  EXPECT_EQ(q->ffn, 1536);
  EXPECT_EQ(q->moe->shared_ffn, 0);
  EXPECT_EQ(q->moe->layer_freq(), "1");
  EXPECT_FALSE(q->moe->sigmoid);
  EXPECT_TRUE(q->moe->normalize_top_k);
  EXPECT_FALSE(q->mla);
  const auto x = model_shape_of(load_model_for_devices("mixtral-8x7b", 1, 1));
  ASSERT_TRUE(x && x->moe);
  EXPECT_EQ(x->moe->experts, 8);
  EXPECT_EQ(x->moe->top_k, 2);
  EXPECT_EQ(x->moe->expert_ffn, 14336);
  EXPECT_EQ(x->kv_heads, 8);
}

// The MoE and MLA shape travel in the plan file; a malformed one is refused naming the field.
TEST(MoeModelShape, TravelsInThePlanFile) {
  const auto m = *model_shape_of(load_model_for_devices("deepseek-tiny", 1, 4));
  const ModelShape back = model_shape_from_json(model_shape_to_json(m));
  ASSERT_TRUE(back.moe && back.mla);
  EXPECT_EQ(back.moe->layers, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(back.moe->shared_ffn, 32);
  EXPECT_TRUE(back.moe->sigmoid);
  EXPECT_EQ(back.mla->q_lora_rank, 32);
  EXPECT_EQ(back.mla->kv_lora_rank, 16);
  EXPECT_EQ(model_shape_to_json(back), model_shape_to_json(m));
  auto j = model_shape_to_json(m);
  j["moe"]["top_k"] = 5;
  EXPECT_THROW(model_shape_from_json(j), InputError);
  j = model_shape_to_json(m);
  j["moe"]["layers"] = {1, 1};
  EXPECT_THROW(model_shape_from_json(j), InputError);
}

// Qwen3-235B-A22B on 256 H100s as published (shared/reference/moe-runs.md): TP 2, PP 8 with 4
// virtual stages, EP 32 with DeepEP, the all-to-all overlapped. 94 layers in 32 chunks are cut
// [2, 3 x 30, 2], which Megatron-LM takes as a pipeline layout.
TEST(MegatronMoe, Qwen3PublishedLayout) {
  const Plan plan = moe_round_trip(optimize_plan(
      moe::qwen3_model(), load_machine("dgx-h100", {0, 256}), moe::qwen3_layout(true)));
  ASSERT_TRUE(plan.pipeline);
  const ExportResult r = export_launch(plan, {Framework::Megatron, false});
  expect_known_names(r.file);
  auto args = script_args(r.file.text);
  EXPECT_EQ(args["--num-experts"], "128");
  EXPECT_EQ(args["--moe-router-topk"], "8");
  EXPECT_EQ(args["--moe-ffn-hidden-size"], "1536");
  EXPECT_EQ(args["--moe-layer-freq"], "1");
  EXPECT_FALSE(args.count("--moe-shared-expert-intermediate-size"));
  EXPECT_EQ(args["--moe-router-score-function"], "softmax");
  EXPECT_FALSE(args.count("--moe-router-pre-softmax"));  // renormalised: softmax after top-k
  EXPECT_EQ(args["--expert-model-parallel-size"], "32");
  EXPECT_EQ(args["--expert-tensor-parallel-size"], "1");
  EXPECT_EQ(args["--moe-token-dispatcher-type"], "flex");
  EXPECT_TRUE(args.count("--moe-enable-deepep"));
  EXPECT_TRUE(args.count("--overlap-moe-expert-parallel-comm"));
  EXPECT_TRUE(args.count("--moe-grouped-gemm"));
  EXPECT_EQ(args["--tensor-model-parallel-size"], "2");
  EXPECT_EQ(args["--pipeline-model-parallel-size"], "8");
  EXPECT_EQ(args["--pipeline-model-parallel-layout"], "\"Et*2|(t*3|)*29t*3|t*2L\"");
  EXPECT_FALSE(args.count("--num-layers-per-virtual-pipeline-stage"));
  EXPECT_EQ(args["--num-query-groups"], "4");
  EXPECT_EQ(args["--kv-channels"], "128");
  EXPECT_FALSE(args.count("--multi-latent-attention"));
  // TP x CP x DP = 2 x 1 x 16 = ETP x EP x EDP = 1 x 32 x 1.
  EXPECT_EQ(r.spec.dp, 16);
  EXPECT_EQ(r.spec.edp, 1);
  // Its "norm, act" recomputation, as NVIDIA's script writes it.
  EXPECT_EQ(args["--recompute-granularity"], "selective");
  EXPECT_NE(r.file.text.find("--recompute-modules layernorm moe_act\n"), std::string::npos)
      << r.file.text;
  // torchtitan's qwen3 has the flavor but no pipelining; DeepSpeed neither top-8 nor DeepEP;
  // neither names recomputation modules.
  const std::string titan = moe_refusal(plan, Framework::Torchtitan);
  EXPECT_NE(titan.find("qwen3 has no pipeline parallelism"), std::string::npos) << titan;
  EXPECT_NE(titan.find("not the modules layernorm,moe_act"), std::string::npos) << titan;
  const std::string ds = moe_refusal(plan, Framework::DeepSpeed);
  EXPECT_NE(ds.find("picks 1 or 2 experts, not 8"), std::string::npos) << ds;
  EXPECT_NE(ds.find("not DeepEP"), std::string::npos) << ds;
  EXPECT_NE(ds.find("not the modules layernorm,moe_act"), std::string::npos) << ds;
}

// The intra-node row counts the embedding and the loss as layers: 96 chunks on 32 stages, the
// first holding the embedding alone and the last the loss alone, which Megatron's layout string
// writes as E and L stages of their own.
TEST(MegatronMoe, Qwen3IntraNodeLayoutWithTheEmbeddingAndLossAsStages) {
  const Plan plan = moe_round_trip(optimize_plan(
      moe::qwen3_model(), load_machine("dgx-h100", {0, 256}), moe::qwen3_intra_node_layout()));
  ASSERT_TRUE(plan.pipeline);
  EXPECT_TRUE(plan.pipeline->embedding_in_split && plan.pipeline->loss_in_split);
  const ExportResult r = export_launch(plan, {Framework::Megatron, false});
  expect_known_names(r.file);
  auto args = script_args(r.file.text);
  EXPECT_EQ(args["--pipeline-model-parallel-size"], "32");
  EXPECT_EQ(args["--pipeline-model-parallel-layout"], "\"E|(t|)*93t|L\"");
  EXPECT_EQ(args["--expert-model-parallel-size"], "8");
  EXPECT_EQ(args["--moe-token-dispatcher-type"], "alltoall");
  EXPECT_EQ(r.spec.dp, 4);
  EXPECT_EQ(r.spec.edp, 1);
}

// DeepSeek-V3 on 1,024 H100s as NeMo ran it (TP 2, PP 8, VP 4, EP 64, fp8, DeepEP): its MLA and
// its dense-first layers as the config publishes them.
TEST(MegatronMoe, DeepSeekV3PublishedLayout) {
  const Plan plan = moe_round_trip(optimize_plan(
      moe::deepseek_v3_model(), load_machine("dgx-h100", {0, 1024}), moe::deepseek_v3_layout()));
  const ExportResult r = export_launch(plan, {Framework::Megatron, false});
  expect_known_names(r.file);
  auto args = script_args(r.file.text);
  EXPECT_EQ(args["--num-layers"], "61");
  EXPECT_EQ(args["--ffn-hidden-size"], "18432");
  EXPECT_TRUE(args.count("--multi-latent-attention"));
  EXPECT_EQ(args["--q-lora-rank"], "1536");
  EXPECT_EQ(args["--kv-lora-rank"], "512");
  EXPECT_EQ(args["--qk-head-dim"], "128");
  EXPECT_EQ(args["--qk-pos-emb-head-dim"], "64");
  EXPECT_EQ(args["--v-head-dim"], "128");
  EXPECT_EQ(args["--rope-type"], "rope");
  EXPECT_TRUE(args.count("--no-rope-fusion"));
  EXPECT_FALSE(args.count("--num-query-groups"));
  EXPECT_FALSE(args.count("--kv-channels"));
  EXPECT_EQ(args["--num-experts"], "256");
  EXPECT_EQ(args["--moe-router-topk"], "8");
  EXPECT_EQ(args["--moe-ffn-hidden-size"], "2048");
  EXPECT_EQ(args["--moe-shared-expert-intermediate-size"], "2048");
  EXPECT_EQ(args["--moe-layer-freq"], "\"([0]*3+[1]*58)\"");
  EXPECT_EQ(args["--moe-router-score-function"], "sigmoid");
  EXPECT_EQ(args["--moe-router-num-groups"], "8");
  EXPECT_EQ(args["--moe-router-group-topk"], "4");
  EXPECT_EQ(args["--expert-model-parallel-size"], "64");
  EXPECT_EQ(args["--expert-tensor-parallel-size"], "1");
  EXPECT_EQ(args["--moe-token-dispatcher-type"], "flex");
  EXPECT_TRUE(args.count("--bf16"));
  EXPECT_EQ(args["--fp8-format"], "hybrid");
  // 61 layers in 32 chunks: [1, 1, 2 x 29, 1].
  EXPECT_EQ(args["--pipeline-model-parallel-layout"], "\"Et|t|(t*2|)*28t*2|tL\"");
  // torchtitan has DeepSeek-V3 (671B) but not its float8 tensorwise scaling with TP.
  const std::string titan = moe_refusal(plan, Framework::Torchtitan);
  EXPECT_NE(titan.find("deepseek_v3 refuses float8 tensorwise"), std::string::npos) << titan;
  const std::string ds = moe_refusal(plan, Framework::DeepSpeed);
  EXPECT_NE(ds.find("no multi-head latent attention"), std::string::npos) << ds;
  EXPECT_NE(ds.find("no shared experts"), std::string::npos) << ds;
  EXPECT_NE(ds.find("not a sigmoid"), std::string::npos) << ds;
}

// Megatron-Core's expert-grid rules, each named.
TEST(MegatronMoe, ExpertRulesNamed) {
  LaunchSpec s;
  s.model = *model_shape_of(load_model_for_devices("moe-tiny", 1, 4));  // 4 experts
  s.tp = 2;
  s.dp = 3;
  s.ep = 3;
  s.edp = 1;
  s.pp = 2;
  s.chunk_layers = {1, 1};
  s.micro_batch_size = 1;
  s.global_batch = 3;
  s.ep_comm_overlap = true;
  s.recompute = Recompute::Full;
  s.dtype = "bf16";
  const auto v = megatron_layout_violations(s);
  const auto has = [&](const std::string& rule) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& x) {
      return x.find("rule '" + rule) != std::string::npos;
    });
  };
  EXPECT_TRUE(has("the expert grid folds into the dense one"));  // 2 x 3 != 3 x 1
  EXPECT_TRUE(has("EP divides the experts"));                    // 4 on 3
  EXPECT_TRUE(has("--overlap-moe-expert-parallel-comm needs virtual stages"));
  EXPECT_TRUE(has("--overlap-moe-expert-parallel-comm needs no full recomputation"));
  EXPECT_FALSE(has("--overlap-moe-expert-parallel-comm needs expert parallelism"));
  s.ep = 2;
  s.edp = 3;
  s.ep_comm_overlap = false;
  EXPECT_TRUE(megatron_layout_violations(s).empty());
}

// Megatron-Core's delayed fp8 scaling (its default recipe) refuses recomputing layernorm and
// moe_act (TransformerConfig's checks): such a plan launches with current scaling, per-tensor as
// costed, and says so; a plan recomputing neither keeps the default. moe_act is recomputed only
// inside the grouped GEMM, which fp16 experts do not run: that plan is refused.
TEST(MegatronMoe, RecomputedModulesTakeTheFp8RecipeThatAllowsThem) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 1;
  o.layout.expert_parallel = 2;
  o.layout.recompute = Recompute::Selective;
  o.layout.recompute_modules.bits = RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation;
  // fp8: bf16 with its GEMMs in fp8 (--dtype fp8); else the dtype.
  auto plan_in = [&](bool fp8, DataType dtype, const OptimizeOptions& options) {
    Graph g = load_model_for_devices("moe-tiny", 2, 8);
    set_compute_dtype(g, dtype);
    if (fp8) set_fp8_gemms(g);
    return moe_round_trip(optimize_plan(g, load_machine("dgx-h100", {0, 2}), options));
  };
  const ExportResult fp8 =
      export_launch(plan_in(true, DataType::BFloat16, o), {Framework::Megatron, false});
  auto args = script_args(fp8.file.text);
  EXPECT_EQ(args["--fp8-format"], "hybrid");
  EXPECT_EQ(args["--fp8-recipe"], "tensorwise");
  ASSERT_FALSE(fp8.file.notes.empty());
  EXPECT_TRUE(std::any_of(fp8.file.notes.begin(), fp8.file.notes.end(), [](const auto& n) {
    return n.find("delayed scaling) refuses recomputing layernorm and moe_act") !=
           std::string::npos;
  }));
  OptimizeOptions attention_only = o;
  attention_only.layout.recompute_modules = {};
  args = script_args(
      export_launch(plan_in(true, DataType::BFloat16, attention_only), {Framework::Megatron, false})
          .file.text);
  EXPECT_EQ(args["--fp8-format"], "hybrid");
  EXPECT_FALSE(args.count("--fp8-recipe"));  // Megatron's default, delayed, as its examples
  const std::string fp16 = moe_refusal(plan_in(false, DataType::Float16, o), Framework::Megatron);
  EXPECT_NE(fp16.find("recomputes moe_act only in its grouped GEMM"), std::string::npos) << fp16;
}

// A top-1 softmax router (Switch's): Megatron-Core refuses the softmax after the pick (its
// gradient is zero), so a router weighting each token by its pick's probability is written with
// --moe-router-pre-softmax, and one renormalised over its single pick (every weight 1) is refused.
TEST(MegatronMoe, TopOneSoftmaxRouterWeightsByItsProbability) {
  const Plan plan = small_moe_plan("moe-tiny", 8, 1, 1, 4);
  Derivation d = launch_spec_of(plan);
  ASSERT_TRUE(d.spec);
  LaunchSpec s = *d.spec;
  ASSERT_TRUE(s.model.moe);
  s.model.moe->top_k = 1;
  s.model.moe->sigmoid = false;
  s.model.moe->normalize_top_k = false;
  EXPECT_TRUE(cannot_run(s, Framework::Megatron).empty());
  auto args = script_args(write_launch(s, Framework::Megatron).text);
  EXPECT_EQ(args["--moe-router-topk"], "1");
  EXPECT_TRUE(args.count("--moe-router-pre-softmax"));
  s.model.moe->normalize_top_k = true;
  const auto why = cannot_run(s, Framework::Megatron);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("refuses a softmax after a top-1 pick"), std::string::npos) << why[0];
}

// A torchtitan job for Qwen3-30B-A3B without stages: the qwen3 flavor, the experts over 8
// devices with DeepEP, FSDP over the 16 copies.
TEST(TorchtitanMoe, Qwen3FlavorAndExpertKeys) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 1;
  o.layout.expert_parallel = 8;
  o.layout.dispatcher = TokenDispatcher::DeepEp;
  o.layout.ep_comm_overlap = true;
  o.layout.recompute = Recompute::None;  // Megatron-Core's overlap takes no full recomputation
  const Plan plan = moe_round_trip(optimize_plan(load_model_for_devices("qwen3-30b-a3b", 16, 64),
                                                 load_machine("dgx-h100", {0, 16}), o));
  const LaunchFile f = export_launch(plan, {Framework::Torchtitan, false}).file;
  expect_known_names(f);
  auto keys = toml_keys(f.text);
  EXPECT_EQ(keys["model.name"], "\"qwen3\"");
  EXPECT_EQ(keys["model.flavor"], "\"30B-A3B\"");
  EXPECT_EQ(keys["parallelism.expert_parallel_degree"], "8");
  EXPECT_EQ(keys["parallelism.expert_tensor_parallel_degree"], "1");
  EXPECT_EQ(keys["parallelism.expert_parallel_comm_backend"], "\"deepep\"");
  EXPECT_EQ(keys["parallelism.data_parallel_shard_degree"], "16");
  EXPECT_EQ(keys["parallelism.data_parallel_replicate_degree"], "1");
  EXPECT_EQ(keys["parallelism.pipeline_parallel_degree"], "1");
  // The 1F1B overlap of the all-to-alls is said, not written.
  EXPECT_TRUE(std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) {
    return n.find("DualPipeV") != std::string::npos;
  }));
  // Megatron-LM writes the same plan's overlap.
  const auto args = script_args(export_launch(plan, {Framework::Megatron, false}).file.text);
  EXPECT_TRUE(args.count("--overlap-moe-expert-parallel-comm"));
  EXPECT_EQ(args.at("--expert-model-parallel-size"), "8");
  // torchtitan routes dropless: a capacity factor is said, not written.
  o.layout.expert_load.capacity_factor = 1.5;
  const Plan capped = moe_round_trip(optimize_plan(load_model_for_devices("qwen3-30b-a3b", 16, 64),
                                                   load_machine("dgx-h100", {0, 16}), o));
  const LaunchFile c = export_launch(capped, {Framework::Torchtitan, false}).file;
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("capacity factor 1.5") != std::string::npos;
  }));
}

// Megatron-DeepSpeed's MoE flags for a small MoE whose experts spread over data-parallel copies;
// where the plan also splits them over its TP group, DeepSpeed refuses and --nearest re-plans at
// TP 1 with the plan's EP.
TEST(DeepSpeedMoe, MegatronDeepSpeedFlagsAndNearest) {
  const Plan dp_plan = small_moe_plan("moe-tiny", 8, 1, 1, 4);
  const LaunchFile f = export_launch(dp_plan, {Framework::DeepSpeed, false}).file;
  expect_known_names(f);
  auto args = script_args(f.text);
  EXPECT_EQ(args["--num-experts"], "4");
  EXPECT_EQ(args["--expert-interval"], "1");
  EXPECT_EQ(args["--topk"], "2");
  EXPECT_EQ(args["--moe-expert-parallel-size"], "4");
  EXPECT_EQ(args["--mlp-type"], "standard");
  EXPECT_TRUE(args.count("--disable-moe-token-dropping"));
  EXPECT_EQ(args["--tensor-model-parallel-size"], "1");

  const Plan tp_plan = small_moe_plan("moe-tiny", 8, 2, 1, 4);
  const std::string why = moe_refusal(tp_plan, Framework::DeepSpeed);
  EXPECT_NE(why.find("not over the plan's TP group of 2"), std::string::npos) << why;
  const ExportResult r = export_launch(tp_plan, {Framework::DeepSpeed, true});
  ASSERT_TRUE(r.nearest);
  EXPECT_EQ(r.spec.tp, 1);
  EXPECT_EQ(r.spec.ep, 4);
  EXPECT_EQ(r.spec.dp, 8);
  expect_known_names(r.file);
  // Megatron-LM runs the TP plan as it is: its experts over the TP group and one more copy.
  const auto meg = script_args(export_launch(tp_plan, {Framework::Megatron, false}).file.text);
  EXPECT_EQ(meg.at("--expert-model-parallel-size"), "4");
  EXPECT_EQ(meg.at("--moe-layer-freq"), "1");
}

// deepseek-tiny: latent attention and a shared expert, dense first layer. Megatron-LM takes it;
// torchtitan has no flavor of its size; DeepSpeed refuses the MLA, the shared expert and the
// sigmoid router, and --nearest finds nothing (they are the model's, not the layout's).
TEST(DeepSpeedMoe, DeepSeekTinyRefusals) {
  const Plan plan = small_moe_plan("deepseek-tiny", 8, 2, 1, 4);
  const auto args = script_args(export_launch(plan, {Framework::Megatron, false}).file.text);
  EXPECT_EQ(args.at("--moe-layer-freq"), "\"([0]*1+[1]*2)\"");
  EXPECT_EQ(args.at("--q-lora-rank"), "32");
  EXPECT_EQ(args.at("--kv-lora-rank"), "16");
  EXPECT_EQ(args.at("--moe-shared-expert-intermediate-size"), "32");
  const std::string titan = moe_refusal(plan, Framework::Torchtitan);
  EXPECT_NE(titan.find("no mixture-of-experts flavor of this shape"), std::string::npos) << titan;
  const std::string ds = moe_refusal(plan, Framework::DeepSpeed);
  EXPECT_NE(ds.find("no multi-head latent attention"), std::string::npos) << ds;
  EXPECT_THROW(export_launch(plan, {Framework::DeepSpeed, true}), InputError);
}

// A capacity factor travels in the plan file and is written as each framework takes it:
// Megatron-LM's capacity with padding, Megatron-DeepSpeed's train capacity in place of its
// dropless flag; torchtitan routes dropless and says so. A dropless plan writes none of them.
TEST(MegatronMoe, CapacityFactorWrittenAsEachFrameworkTakesIt) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 1;
  o.layout.expert_parallel = 4;
  o.layout.expert_load.capacity_factor = 1.25;
  const Plan plan = moe_round_trip(optimize_plan(load_model_for_devices("moe-tiny", 8, 32),
                                                 load_machine("dgx-h100", {0, 8}), o));
  ASSERT_TRUE(plan.pipeline);
  EXPECT_DOUBLE_EQ(plan.pipeline->expert_load.capacity_factor, 1.25);
  const LaunchFile meg = export_launch(plan, {Framework::Megatron, false}).file;
  expect_known_names(meg);
  auto args = script_args(meg.text);
  EXPECT_EQ(args["--moe-expert-capacity-factor"], "1.25");
  EXPECT_TRUE(args.count("--moe-pad-expert-input-to-capacity"));
  const LaunchFile ds = export_launch(plan, {Framework::DeepSpeed, false}).file;
  expect_known_names(ds);
  args = script_args(ds.text);
  EXPECT_EQ(args["--moe-train-capacity-factor"], "1.25");
  EXPECT_FALSE(args.count("--disable-moe-token-dropping"));

  const Plan dropless = small_moe_plan("moe-tiny", 8, 1, 1, 4);
  args = script_args(export_launch(dropless, {Framework::Megatron, false}).file.text);
  EXPECT_FALSE(args.count("--moe-expert-capacity-factor"));
  EXPECT_FALSE(args.count("--moe-pad-expert-input-to-capacity"));

  // Megatron-Core's DeepEP (flex) dispatcher refuses to pad to a capacity: the joint search does
  // not take it for a capped plan, and a capped DeepEP plan exports to Megatron-LM with the
  // all-to-all dispatcher nearest, its capacity factor kept.
  // Qwen3-30B-A3B on 32 H100s with EP 8: the joint search takes DeepEP dropless, the all-to-all
  // dispatcher capped.
  OptimizeOptions joint;
  joint.mode = "joint";
  joint.layout.expert_parallel = 8;
  const Graph qwen = load_model_for_devices("qwen3-30b-a3b", 32, 256);
  const MachineSpec h100 = load_machine("dgx-h100", {0, 32});
  const Plan free = optimize_plan(qwen, h100, joint);
  ASSERT_TRUE(free.pipeline);
  EXPECT_EQ(free.pipeline->token_dispatcher, TokenDispatcher::DeepEp);
  joint.layout.expert_load.capacity_factor = 1.25;
  const Plan capped = optimize_plan(qwen, h100, joint);
  ASSERT_TRUE(capped.pipeline);
  EXPECT_EQ(capped.pipeline->token_dispatcher, TokenDispatcher::AllToAll);
  // Asked for, DeepEP with a capacity factor is costed, and Megatron-LM does not run it.
  OptimizeOptions deepep = o;
  deepep.layout.dispatcher = TokenDispatcher::DeepEp;
  const Plan capped_deepep = moe_round_trip(optimize_plan(
      load_model_for_devices("moe-tiny", 8, 32), load_machine("dgx-h100", {0, 8}), deepep));
  ASSERT_TRUE(capped_deepep.pipeline);
  EXPECT_EQ(capped_deepep.pipeline->token_dispatcher, TokenDispatcher::DeepEp);
  const std::string refused = moe_refusal(capped_deepep, Framework::Megatron);
  EXPECT_NE(refused.find("does not pad the experts' input to their capacity"), std::string::npos)
      << refused;
  const ExportResult nearest = export_launch(capped_deepep, {Framework::Megatron, true});
  args = script_args(nearest.file.text);
  EXPECT_EQ(args["--moe-token-dispatcher-type"], "alltoall");
  EXPECT_EQ(args["--moe-expert-capacity-factor"], "1.25");
  EXPECT_TRUE(args.count("--moe-pad-expert-input-to-capacity"));
}
