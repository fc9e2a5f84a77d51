// Launch files from plans (core/src/launch): Megatron-LM's Table 1 layouts export to the published
// runs' flags, a small plan's torchtitan TOML and DeepSpeed config are what the plan says field by
// field, every name written is its framework's, Megatron-LM's layout rules are named when broken,
// and what no framework runs is refused (or, with nearest, replaced by the nearest layout).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../h100_dense_runs.h"
#include "../megatron_table1.h"
#include "launch_test_helpers.h"
#include "unity/core/errors.h"
#include "unity/core/launch/export_launch.h"
#include "unity/core/launch/launch_limits.h"
#include "unity/core/launch/launcher_verdicts.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/transformer_models.h"

using namespace unity;
using namespace unity::launch;
using launch_test::expect_known_names;
using launch_test::script_args;
using launch_test::toml_keys;

namespace {

// torchtitan's llama3 "debugmodel" flavor: dim 256, 6 layers, 16 heads, FFN 768, vocabulary 2048.
Graph debug_llama(std::int64_t batch, std::int64_t seq = 128) {
  return zoo::build_llama(batch, {6, 256, 16, 16, 768, seq, 2048}, DataType::BFloat16);
}

// Megatron-LM's layout with these fixed (0: searched).
LayoutRequest grid(int tp, int pp, int micro_batches = 0, int interleave = 0) {
  LayoutRequest r;
  r.tensor_parallel = tp;
  r.pipeline_stages = pp;
  r.micro_batches = micro_batches;
  r.interleave = interleave;
  return r;
}

Plan expert_plan(const Graph& model, int gpus, LayoutRequest layout) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout = layout;
  return optimize_plan(model, load_machine("dgx-a100", {0, gpus}), o);
}

// Through the plan file, as `unity export` reads it.
Plan round_trip(const Plan& p) { return plan_from_json(plan_to_json(p)); }

LaunchFile exported(const Plan& p, Framework f) {
  return export_launch(round_trip(p), {f, false}).file;
}

using Row = megatron::Table1Row;
class Table1Export : public ::testing::TestWithParam<Row> {};

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string n = info.param.model;
  for (char& c : n)
    if (c == '-' || c == '.') c = '_';
  return n;
}

}  // namespace

// Each published run's layout (--mode expert --tp t --pp p, as test_megatron_table1 plans it)
// becomes pretrain_gpt.py flags with the run's TP, PP, global batch and full recomputation
// (the SC'21 runs recompute every layer), in fp16, with the model's shape. Where the expert mode
// chose virtual stages of unequal layers (80 layers on 8 stages in 4 chunks each), they are
// written as Megatron-Core's --pipeline-model-parallel-layout.
TEST_P(Table1Export, MegatronFlagsAreThePublishedRun) {
  const Row& row = GetParam();
  const Graph model = load_model_for_devices(row.model, row.gpus, row.batch);
  const Plan plan =
      optimize_plan(model, load_machine("selene", {0, row.gpus}), megatron::layout_of(row));
  ASSERT_TRUE(plan.pipeline);
  const ExportResult r = export_launch(round_trip(plan), {Framework::Megatron, false});
  const LaunchFile& f = r.file;
  expect_known_names(f);
  auto args = script_args(f.text);
  EXPECT_EQ(args["--tensor-model-parallel-size"], std::to_string(row.tp));
  EXPECT_EQ(args["--pipeline-model-parallel-size"], std::to_string(row.pp));
  EXPECT_EQ(args["--global-batch-size"], std::to_string(row.batch));
  EXPECT_EQ(args["--recompute-granularity"], "full");
  EXPECT_EQ(args["--recompute-method"], "uniform");
  EXPECT_EQ(args["--recompute-num-layers"], "1");
  EXPECT_TRUE(args.count("--fp16"));
  EXPECT_FALSE(args.count("--bf16"));
  // The interleaved schedule where the layout uses one, its chunks as Megatron-LM sizes them.
  const LaunchSpec& spec = r.spec;
  const ModelShape& m = *plan.summary.model_shape;
  // (Chunks of unequal layers as Megatron-Core's pipeline layout.)
  if (spec.interleave > 1 && m.layers % (row.pp * spec.interleave) == 0)
    EXPECT_EQ(args["--num-layers-per-virtual-pipeline-stage"],
              std::to_string(m.layers / (row.pp * spec.interleave)));
  else if (spec.interleave > 1)
    EXPECT_EQ(args["--pipeline-model-parallel-layout"], "\"" + pipeline_layout(spec) + "\"");
  else
    EXPECT_FALSE(args.count("--num-layers-per-virtual-pipeline-stage"));
  EXPECT_EQ(args["--micro-batch-size"], std::to_string(spec.micro_batch_size));
  EXPECT_EQ(spec.micro_batch_size * spec.micro_batches * (row.gpus / (row.tp * row.pp)), row.batch);
  // SC'21: no distributed optimizer, no sequence parallelism, no overlap.
  EXPECT_FALSE(args.count("--use-distributed-optimizer"));
  EXPECT_FALSE(args.count("--sequence-parallel"));
  EXPECT_FALSE(args.count("--overlap-grad-reduce"));
  // GPT as Table 1 trains it.
  EXPECT_EQ(args["--num-layers"], std::to_string(m.layers));
  EXPECT_EQ(args["--hidden-size"], std::to_string(m.hidden));
  EXPECT_EQ(args["--num-attention-heads"], std::to_string(m.heads));
  EXPECT_EQ(args["--ffn-hidden-size"], std::to_string(4 * m.hidden));
  EXPECT_EQ(args["--seq-length"], "2048");
  EXPECT_EQ(args["--position-embedding-type"], "learned_absolute");
  EXPECT_EQ(args["--normalization"], "LayerNorm");
  EXPECT_FALSE(args.count("--swiglu"));
  EXPECT_FALSE(args.count("--group-query-attention"));
  EXPECT_TRUE(f.notes.empty()) << f.notes.front();  // 51,200 rows pad to themselves
}

INSTANTIATE_TEST_SUITE_P(Selene, Table1Export, ::testing::ValuesIn(megatron::kTable1), row_name);

TEST(ModelShape, ReadOffTheZoosDecoders) {
  const auto gpt = model_shape_of(load_model_for_devices("gpt-1.7b", 1, 8));
  ASSERT_TRUE(gpt);
  EXPECT_EQ(gpt->layers, 24);
  EXPECT_EQ(gpt->hidden, 2304);
  EXPECT_EQ(gpt->heads, 24);
  EXPECT_EQ(gpt->kv_heads, 24);
  EXPECT_EQ(gpt->ffn, 4 * 2304);
  EXPECT_EQ(gpt->vocab, 51200);
  EXPECT_EQ(gpt->seq, 2048);
  EXPECT_EQ(gpt->positions, 2048);
  EXPECT_FALSE(gpt->rms_norm);
  EXPECT_FALSE(gpt->gated_mlp);
  EXPECT_EQ(gpt->activation, "gelu");
  EXPECT_TRUE(gpt->mlp_bias);
  EXPECT_FALSE(gpt->tied);

  const auto llama = model_shape_of(
      zoo::build_llama(4, {4, 512, 8, 2, 1024, 64, 1000, 128, true}, DataType::BFloat16));
  ASSERT_TRUE(llama);
  EXPECT_EQ(llama->kv_heads, 2);
  EXPECT_EQ(llama->head_dim, 128);
  EXPECT_EQ(llama->kv_channels(), 128);
  EXPECT_TRUE(llama->rotary);
  EXPECT_TRUE(llama->rms_norm);
  EXPECT_TRUE(llama->gated_mlp);
  EXPECT_EQ(llama->activation, "silu");
  EXPECT_FALSE(llama->mlp_bias);
  EXPECT_TRUE(llama->tied);

  std::string why;
  EXPECT_FALSE(model_shape_of(load_model_for_devices("mnist-mlp", 1), &why));
  EXPECT_NE(why.find("no self-attention"), std::string::npos) << why;
  EXPECT_FALSE(model_shape_of(load_model_for_devices("bert-large", 1), &why));
}

// A plan file written before the summary held the model's shape exports as one that holds it.
TEST(ModelShape, OldPlanFilesReadTheirPcg) {
  const Plan plan = expert_plan(debug_llama(32), 8, grid(2, 2));
  auto j = plan_to_json(plan);
  ASSERT_TRUE(j["summary"].contains("model_shape"));
  j["summary"].erase("model_shape");
  const Plan old = plan_from_json(j);
  EXPECT_FALSE(old.summary.model_shape);
  EXPECT_EQ(export_launch(old, {Framework::Megatron, false}).file.text,
            exported(plan, Framework::Megatron).text);
}

// torchtitan's job for a Llama plan on 8 GPUs, key by key.
TEST(TorchtitanExport, SmallPlanFieldByField) {
  LayoutRequest layout = grid(2, 2, 4, 1);
  layout.recompute = Recompute::Full;
  const Plan plan = expert_plan(debug_llama(32), 8, layout);
  ASSERT_TRUE(plan.pipeline);
  const LaunchFile f = exported(plan, Framework::Torchtitan);
  expect_known_names(f);
  auto keys = toml_keys(f.text);
  EXPECT_EQ(keys["model.name"], "\"llama3\"");
  EXPECT_EQ(keys["model.flavor"], "\"debugmodel\"");
  EXPECT_EQ(keys["training.local_batch_size"], "16");  // 4 micro-batches of 4 per step
  EXPECT_EQ(keys["training.global_batch_size"], "32");
  EXPECT_EQ(keys["training.seq_len"], "128");
  EXPECT_EQ(keys["training.mixed_precision_param"], "\"bfloat16\"");
  EXPECT_EQ(keys["parallelism.tensor_parallel_degree"], "2");
  EXPECT_EQ(keys["parallelism.pipeline_parallel_degree"], "2");
  EXPECT_EQ(keys["parallelism.data_parallel_shard_degree"], "2");
  EXPECT_EQ(keys["parallelism.data_parallel_replicate_degree"], "1");
  EXPECT_EQ(keys["parallelism.pipeline_parallel_schedule"], "\"1F1B\"");
  EXPECT_EQ(keys["parallelism.pipeline_parallel_microbatch_size"], "4");
  EXPECT_EQ(keys["parallelism.context_parallel_degree"], "1");
  EXPECT_EQ(keys["activation_checkpoint.mode"], "\"full\"");
  // Megatron-LM's cut of 6 layers into 2 stages, layer by layer.
  EXPECT_NE(f.text.find("[\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\"]"),
            std::string::npos)
      << f.text;
  EXPECT_NE(f.text.find("[\"layers.3\", \"layers.4\", \"layers.5\", \"norm\", \"output\"]"),
            std::string::npos)
      << f.text;
  // ZeRO-0 beside TP: torchtitan's FSDP, said.
  ASSERT_EQ(f.notes.size(), 2u);
  EXPECT_NE(f.notes[0].find("FSDP2"), std::string::npos);
}

// DeepSpeed's config for data parallelism with ZeRO-1 and accumulation, key by key.
TEST(DeepSpeedExport, DataParallelConfigFieldByField) {
  LayoutRequest layout = grid(1, 1, 2);
  layout.zero_stage = 1;
  layout.recompute = Recompute::Full;
  const Plan plan = expert_plan(debug_llama(32), 4, layout);
  const LaunchFile f = exported(plan, Framework::DeepSpeed);
  expect_known_names(f);
  const auto j = nlohmann::json::parse(f.text);
  EXPECT_EQ(j["train_batch_size"], 32);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 4);
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);
  EXPECT_EQ(j["bf16"]["enabled"], true);
  EXPECT_FALSE(j.contains("fp16"));
  EXPECT_EQ(j["zero_optimization"]["stage"], 1);
  EXPECT_EQ(j["zero_optimization"]["overlap_comm"], false);
  EXPECT_EQ(j["activation_checkpointing"]["number_checkpoints"], 6);
  EXPECT_EQ(j.size(), 6u);
}

// With TP and PP, the config rides in a Megatron-DeepSpeed script.
TEST(DeepSpeedExport, ModelParallelIsMegatronDeepSpeed) {
  LayoutRequest layout = grid(2, 2, 4, 1);
  layout.zero_stage = 1;
  const Plan plan = expert_plan(debug_llama(32), 8, layout);
  const LaunchFile f = exported(plan, Framework::DeepSpeed);
  expect_known_names(f);
  auto args = script_args(f.text);
  EXPECT_EQ(args["--tensor-model-parallel-size"], "2");
  EXPECT_EQ(args["--pipeline-model-parallel-size"], "2");
  EXPECT_EQ(args["--zero-stage"], "1");
  EXPECT_EQ(args["--normalization"], "rmsnorm");
  EXPECT_TRUE(args.count("--swiglu"));
  EXPECT_TRUE(args.count("--deepspeed"));
  const auto open = f.text.find("<<'JSON'\n"), close = f.text.find("\nJSON\n");
  ASSERT_NE(open, std::string::npos);
  const auto j = nlohmann::json::parse(f.text.substr(open + 9, close - open - 9));
  EXPECT_EQ(j["train_batch_size"], 32);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 4);
  EXPECT_EQ(j["gradient_accumulation_steps"], 4);
}

TEST(MegatronRules, EachViolationNamesItsRule) {
  LaunchSpec s;
  s.model = *model_shape_of(debug_llama(32));
  s.tp = 3;
  s.pp = 2;
  s.dp = 1;
  s.interleave = 2;
  s.chunk_layers = {2, 1, 1, 2};
  s.micro_batch_size = 4;
  s.micro_batches = 4;
  s.global_batch = 32;
  s.tp_comm_overlap = true;
  const auto v = megatron_layout_violations(s);
  const auto has = [&](const std::string& rule) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& x) {
      return x.find("rule '" + rule + "'") != std::string::npos;
    });
  };
  EXPECT_TRUE(has("TP divides the attention heads"));
  EXPECT_TRUE(has("TP divides the KV heads (query groups)"));
  EXPECT_FALSE(has("virtual stages need PP > 1"));
  EXPECT_TRUE(has("global batch = micro-batch x DP x accumulation"));
  EXPECT_TRUE(has("TP communication overlap needs sequence parallelism"));
  EXPECT_FALSE(has("TP divides the FFN width"));  // 768 on 3
  // The Megatron writer refuses what breaks them, naming the rule.
  try {
    write_launch(s, Framework::Megatron);
    ADD_FAILURE() << "written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("TP divides the attention heads"), std::string::npos);
  }
  // Uneven stages: only the first and last may hold fewer.
  s = LaunchSpec{};
  s.model = *model_shape_of(debug_llama(32));
  s.pp = 4;
  s.chunk_layers = {1, 2, 1, 2};
  s.global_batch = 1;
  EXPECT_EQ(megatron_layout_violations(s).size(), 1u);
  s.chunk_layers = {1, 2, 2, 1};
  EXPECT_TRUE(megatron_layout_violations(s).empty());
  const auto args = script_args(write_megatron(s).text);
  EXPECT_EQ(args.at("--decoder-first-pipeline-num-layers"), "1");
  EXPECT_EQ(args.at("--decoder-last-pipeline-num-layers"), "1");
  // Virtual stages of unequal layers: Megatron-Core's layout, stages in model order (chunk c on
  // rank c % PP), E the embedding, L the loss.
  s.pp = 2;
  s.interleave = 3;
  s.chunk_layers = {1, 1, 2, 2, 2, 1};
  EXPECT_TRUE(megatron_layout_violations(s).empty());
  EXPECT_EQ(pipeline_layout(s), "Et|t|(t*2|)*2t*2|tL");
  const auto layout = script_args(write_megatron(s).text);
  EXPECT_EQ(layout.at("--pipeline-model-parallel-layout"), "\"Et|t|(t*2|)*2t*2|tL\"");
  EXPECT_FALSE(layout.count("--num-layers-per-virtual-pipeline-stage"));
}

// The joint search's plan of an MLP is no framework's: refused, naming why, with or without
// --nearest.
TEST(ExportRefusal, JointPlanOfMnistMlp) {
  OptimizeOptions o;
  o.mode = "joint";
  o.budget = 10;
  const Plan plan = round_trip(
      optimize_plan(load_model_for_devices("mnist-mlp", 4), load_machine("dgx-a100", {0, 4}), o));
  for (bool nearest : {false, true})
    for (Framework f : {Framework::Megatron, Framework::Torchtitan, Framework::DeepSpeed}) {
      try {
        export_launch(plan, {f, nearest});
        ADD_FAILURE() << "exported";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("is not a decoder-only transformer"),
                  std::string::npos)
            << e.what();
      }
    }
}

// A layout DeepSpeed cannot run (interleaved stages): refused, and with nearest the same layout
// without the interleaving, both costs known.
TEST(ExportNearest, DeepSpeedGetsTheLayoutWithoutInterleaving) {
  LayoutRequest layout = grid(2, 2, 4, 3);
  const Plan plan = round_trip(expert_plan(debug_llama(32), 8, layout));
  ASSERT_EQ(plan.pipeline->interleave, 3);
  EXPECT_THROW(export_launch(plan, {Framework::DeepSpeed, false}), InputError);
  // Megatron-LM runs it as it is.
  const auto megatron = script_args(export_launch(plan, {Framework::Megatron, false}).file.text);
  EXPECT_EQ(megatron.at("--num-layers-per-virtual-pipeline-stage"), "1");
  const ExportResult r = export_launch(plan, {Framework::DeepSpeed, true});
  ASSERT_TRUE(r.nearest);
  EXPECT_EQ(r.spec.interleave, 1);
  EXPECT_EQ(r.spec.tp, 2);
  EXPECT_EQ(r.spec.pp, 2);
  EXPECT_EQ(r.spec.micro_batches, 4);
  EXPECT_GT(r.nearest->summary.iteration_time_ms, 0);
  ASSERT_FALSE(r.refused.empty());
  EXPECT_NE(r.refused[0].find("interleaved"), std::string::npos);
}

// A nearby layout differs from the plan by its layout alone: the plan's algebraic rewrites
// (fused attention, which every framework runs) are read back from the plan file and kept. A
// joint plan's PCG is the serial model as given; the rewrites its search chose are in its kind
// plans and its list of applied substitutions.
TEST(ExportNearest, KeepsThePlansFusedAttention) {
  OptimizeOptions o;
  o.mode = "joint";
  o.budget = 10;
  o.layout = grid(2, 2, 4, 3);
  const MachineSpec a100 = load_machine("dgx-a100", {0, 8});
  const Plan plan = round_trip(optimize_plan(debug_llama(32), a100, o));
  auto fused = [](const Plan& p) {
    return std::any_of(p.summary.substitutions_applied.begin(),
                       p.summary.substitutions_applied.end(),
                       [](const AppliedSubstitution& a) { return a.rule == "fuse_attention"; });
  };
  ASSERT_TRUE(fused(plan));
  const ExportResult r = export_launch(plan, {Framework::DeepSpeed, true});
  ASSERT_TRUE(r.nearest);
  EXPECT_TRUE(fused(*r.nearest));
}

// Segments the joint search split its own way are no framework's layout; nearest re-plans them
// as Megatron-LM splits a layer, at the plan's TP and PP.
TEST(ExportNearest, JointSegmentPlansBecomeMegatronsSplit) {
  const Plan expert = expert_plan(debug_llama(32), 8, grid(2, 2));
  auto j = plan_to_json(expert);
  for (auto& d : j["pipeline"]["segment_plans"])
    d = d.get<std::string>().substr(0, d.get<std::string>().rfind(": ")) +
        ": joint search, 4 substitutions";
  const Plan joint = plan_from_json(j);
  try {
    export_launch(joint, {Framework::Megatron, false});
    ADD_FAILURE() << "exported";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("split segments like"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--nearest"), std::string::npos) << e.what();
  }
  const ExportResult r = export_launch(joint, {Framework::Megatron, true});
  ASSERT_TRUE(r.nearest);
  EXPECT_EQ(r.spec.tp, 2);
  EXPECT_EQ(r.spec.pp, 2);
  EXPECT_NEAR(r.nearest->summary.iteration_time_ms, expert.summary.iteration_time_ms,
              1e-6 * expert.summary.iteration_time_ms);
}

// Chunks cut inside layers (as the joint search's time-balanced stages may cut Llama 3 405B's
// 126 layers into 42 chunks) are refused in one reason: the first cut named and the rest counted.
TEST(ExportRefusal, CutsInsideLayersAreOneReason) {
  const Plan expert = expert_plan(debug_llama(32), 8, grid(1, 2, 4, 3));
  ASSERT_EQ(expert.pipeline->chunks.size(), 6u);
  auto j = plan_to_json(expert);
  // Every chunk but the last ends inside the layer the next one starts with.
  auto& stages = j["pipeline"]["stages"];
  for (std::size_t c = 0; c + 1 < stages.size(); ++c)
    stages[c]["layers"][1] = stages[c + 1]["layers"][0];
  const Plan cut = plan_from_json(j);
  try {
    export_launch(cut, {Framework::Megatron, false});
    ADD_FAILURE() << "exported";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("which chunk 1 continues, and 4 more of the plan's 6 chunks end inside a "
                        "layer: frameworks cut pipeline stages between whole layers"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("chunk 2 continues"), std::string::npos) << what;
  }
}

// The joint search balances Llama 2 7B's stages by time on 16 H100s and cuts inside layers, which
// no launcher takes; with --launchable it plans only what one does (Megatron-LM's split of each
// layer, stages of whole layers), and the plan exports as it is.
TEST(LaunchablePlans, JointSearchPlansWhatMegatronRuns) {
  const Graph model = load_model_for_devices("llama-7b", 16, 64);
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  OptimizeOptions free;
  free.mode = "joint";
  const Plan own = optimize_plan(model, machine, free);
  ASSERT_TRUE(own.pipeline);
  EXPECT_THROW(export_launch(own, {Framework::Megatron, false}), InputError);
  // Its layers on one device each with a fused attention are Megatron-LM's too, within half a
  // percent of the search's own plan of them: Megatron-LM's is taken, a launcher runs it.
  for (const auto& d : own.pipeline->segment_plans)
    EXPECT_EQ(d.find("joint search"), std::string::npos) << d;
  OptimizeOptions launchable = free;
  launchable.layout.launchable = true;
  const Plan plan = optimize_plan(model, machine, launchable);
  ASSERT_TRUE(plan.pipeline);
  const ExportResult r = export_launch(plan, {Framework::Megatron, false});
  EXPECT_FALSE(r.nearest);
  EXPECT_EQ(r.spec.tp, plan.pipeline->tensor_parallel);
  EXPECT_EQ(r.spec.pp, plan.pipeline->pipeline_stages);
  // Each chunk holds whole layers: the next one starts a layer later.
  const auto& chunks = plan.pipeline->chunks;
  for (std::size_t c = 0; c + 1 < chunks.size(); ++c)
    EXPECT_EQ(chunks[c + 1].first_layer, chunks[c].last_layer + 1) << "chunk " << c;
  // The restriction costs time, never saves it.
  EXPECT_GE(plan.summary.iteration_time_ms, own.summary.iteration_time_ms * (1 - 1e-9));
  // --launchable is a layout request: --mode sequential refuses it.
  OptimizeOptions sequential = launchable;
  sequential.mode = "sequential";
  EXPECT_THROW(optimize_plan(model, machine, sequential), InputError);
}

// `--launcher deepspeed`: the search leaves out what DeepSpeed lacks, and its plan of Llama 2 7B on
// 16 H100s exports to DeepSpeed as it is (the --launchable plan, interleaved, does not).
TEST(LaunchablePlans, OneLaunchersLimitsLeaveOutWhatItLacks) {
  const Graph model = load_model_for_devices("llama-7b", 16, 64);
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  OptimizeOptions any;
  any.mode = "joint";
  any.layout.launchable = true;
  EXPECT_THROW(export_launch(optimize_plan(model, machine, any), {Framework::DeepSpeed, false}),
               InputError);
  OptimizeOptions deepspeed;
  deepspeed.mode = "joint";
  limit_to_launcher(deepspeed.layout, Framework::DeepSpeed);
  EXPECT_TRUE(deepspeed.layout.launchable);
  const Plan plan = optimize_plan(model, machine, deepspeed);
  ASSERT_TRUE(plan.pipeline);
  const auto& p = *plan.pipeline;
  EXPECT_EQ(p.interleave, 1);
  EXPECT_FALSE(p.tp_comm_overlap);
  EXPECT_EQ(p.context_parallel, 1);
  if (p.pipeline_stages > 1) {
    EXPECT_LE(p.zero_stage, 1);
  }
  const ExportResult r = export_launch(plan, {Framework::DeepSpeed, false});
  EXPECT_FALSE(r.nearest);
  // What the request fixes and DeepSpeed lacks is refused, naming the flag.
  LayoutRequest interleaved;
  interleaved.interleave = 2;
  try {
    limit_to_launcher(interleaved, Framework::DeepSpeed);
    ADD_FAILURE() << "limited";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--launcher deepspeed: --interleave"), std::string::npos)
        << e.what();
  }
  // Its pipeline engine gives every stage as many layers: 30 layers take no 4 stages.
  zoo::TransformerResize thirty;
  thirty.layers = 30;
  OptimizeOptions four = deepspeed;
  four.layout.pipeline_stages = 4;
  EXPECT_THROW(optimize_plan(load_model_for_devices("llama-7b", 16, 64, thirty), machine, four),
               InputError);
  four.layout.pipeline_stages = 2;
  EXPECT_EQ(optimize_plan(load_model_for_devices("llama-7b", 16, 64, thirty), machine, four)
                .pipeline->pipeline_stages,
            2);
  // Megatron-LM's limits are --launchable's.
  LayoutRequest megatron;
  limit_to_launcher(megatron, Framework::Megatron);
  EXPECT_TRUE(megatron.launchable);
  EXPECT_EQ(megatron.interleave, 0);
  EXPECT_EQ(megatron.max_zero_with_stages, 3);
}

// DeepSpeed's MoE layer spreads the experts over data-parallel copies with its own all-to-all
// and takes no ZeRO-3: `--launcher deepspeed` plans Mixtral 8x7B on 32 H100s so (the joint search
// alone picks DeepEP or an overlapped all-to-all, which DeepSpeed refuses), and refuses those
// fixed by flag.
TEST(LaunchablePlans, DeepSpeedsExpertLimitsBindWhereTheModelHasExperts) {
  const Graph model = load_model_for_devices(
      std::string(UNITY_SOURCE_DIR) + "/models/hf/Mixtral-8x7B-v0.1", 32, 128, [] {
        zoo::TransformerResize r;
        r.seq = 4096;
        return r;
      }());
  const MachineSpec machine = load_machine("dgx-h100", {0, 32});
  OptimizeOptions deepspeed;
  deepspeed.mode = "joint";
  limit_to_launcher(deepspeed.layout, Framework::DeepSpeed);
  const Plan plan = optimize_plan(model, machine, deepspeed);
  ASSERT_TRUE(plan.pipeline);
  const auto& p = *plan.pipeline;
  EXPECT_EQ(p.tensor_parallel, 1);
  EXPECT_GT(p.expert_parallel, 1);
  EXPECT_EQ(p.token_dispatcher, TokenDispatcher::AllToAll);
  EXPECT_FALSE(p.ep_comm_overlap);
  EXPECT_LE(p.zero_stage, 2);
  EXPECT_FALSE(export_launch(plan, {Framework::DeepSpeed, false}).nearest);
  for (auto fix : {+[](LayoutRequest& r) { r.tensor_parallel = 2; },
                   +[](LayoutRequest& r) { r.dispatcher = TokenDispatcher::DeepEp; },
                   +[](LayoutRequest& r) { r.ep_comm_overlap = true; },
                   +[](LayoutRequest& r) { r.zero_stage = 3; }}) {
    OptimizeOptions fixed = deepspeed;
    fix(fixed.layout);
    EXPECT_THROW(optimize_plan(model, machine, fixed), InputError);
  }
  // A dense model keeps tensor parallelism under the same limits.
  OptimizeOptions dense = deepspeed;
  dense.layout.tensor_parallel = 2;
  EXPECT_EQ(optimize_plan(load_model_for_devices("llama-7b", 32, 128), machine, dense)
                .pipeline->tensor_parallel,
            2);
}

// torchtitan's deepseek_v3 671B attends with FlexAttention, which its context parallelism does
// not take, and its qwen3 flavors have no pipelining: `--launcher torchtitan` plans DeepSeek-V3 on
// 32 H100s without CP (--launchable alone takes CP 4, which torchtitan refuses), and --cp or --pp
// fixed for them are refused by name.
TEST(LaunchablePlans, TorchtitansFlavorLimitsBindForItsModel) {
  zoo::TransformerResize seq;
  seq.seq = 4096;
  const std::string hf = std::string(UNITY_SOURCE_DIR) + "/models/hf/";
  const Graph deepseek = load_model_for_devices(hf + "DeepSeek-V3", 32, 128, seq);
  const MachineSpec machine = load_machine("dgx-h100", {0, 32});
  OptimizeOptions launchable;
  launchable.mode = "joint";
  launchable.layout.launchable = true;
  EXPECT_GT(optimize_plan(deepseek, machine, launchable).pipeline->context_parallel, 1);
  OptimizeOptions torchtitan;
  torchtitan.mode = "joint";
  limit_to_launcher(torchtitan.layout, Framework::Torchtitan);
  const Plan plan = optimize_plan(deepseek, machine, torchtitan);
  ASSERT_TRUE(plan.pipeline);
  EXPECT_EQ(plan.pipeline->context_parallel, 1);
  EXPECT_FALSE(export_launch(plan, {Framework::Torchtitan, false}).nearest);
  const auto refused = [&](const Graph& model, void (*fix)(LayoutRequest&), const char* why) {
    OptimizeOptions fixed = torchtitan;
    fix(fixed.layout);
    try {
      optimize_plan(model, machine, fixed);
      ADD_FAILURE() << "planned";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(
      deepseek, +[](LayoutRequest& r) { r.context_parallel = 2; },
      "--cp asks for context parallelism (its attention is FlexAttention), which "
      "torchtitan's deepseek_v3 671B has not");
  refused(
      load_model_for_devices(hf + "Qwen3-30B-A3B", 32, 128, seq),
      +[](LayoutRequest& r) { r.pipeline_stages = 2; },
      "--pp asks for pipeline parallelism, which torchtitan's qwen3 30B-A3B has not");
  // Its deepseek_v3 refuses tensorwise float8 where TP > 1: an fp8 plan keeps TP 1 (the search
  // would otherwise split it), and --tp 2 is refused by name.
  Graph fp8 = deepseek;
  set_fp8_gemms(fp8);
  const Plan fp8_plan = optimize_plan(fp8, machine, torchtitan);
  ASSERT_TRUE(fp8_plan.pipeline);
  EXPECT_EQ(fp8_plan.pipeline->tensor_parallel, 1);
  EXPECT_FALSE(export_launch(fp8_plan, {Framework::Torchtitan, false}).nearest);
  refused(
      fp8, +[](LayoutRequest& r) { r.tensor_parallel = 2; },
      "--tp asks for tensor parallelism with float8 GEMMs (--dtype fp8), which torchtitan's "
      "deepseek_v3 671B has not");
}

// Megatron-DeepSpeed's GPT has no rope scaling, so Llama 3.1 trains on DeepSpeed's data-parallel
// path only (the Hugging Face model under ZeRO): --launcher deepspeed plans TP 1 and PP 1 where
// --launcher megatron splits it (TP 2 on 64 H100s at 8,192 tokens), and refuses --tp 2 by name.
TEST(LaunchablePlans, DeepSpeedTrainsWhatItsGptCannotBuildDataParallel) {
  zoo::TransformerResize seq;
  seq.seq = 8192;
  const Graph llama = load_model_for_devices(
      std::string(UNITY_SOURCE_DIR) + "/models/hf/Llama-3.1-8B", 64, 256, seq);
  const MachineSpec machine = load_machine("dgx-h100", {0, 64});
  const auto plan_for = [&](Framework f, int tp = 0) {
    OptimizeOptions o;
    o.mode = "joint";
    o.layout.tensor_parallel = tp;
    limit_to_launcher(o.layout, f);
    return optimize_plan(llama, machine, o);
  };
  const Plan megatron = plan_for(Framework::Megatron);
  EXPECT_GT(megatron.pipeline->tensor_parallel, 1);
  // Megatron-LM's plan exported to DeepSpeed: the nearest layout it runs is data-parallel.
  const ExportResult nearest = export_launch(megatron, {Framework::DeepSpeed, true});
  ASSERT_TRUE(nearest.nearest);
  EXPECT_EQ(nearest.spec.tp, 1);
  EXPECT_EQ(nearest.spec.pp, 1);
  const Plan deepspeed = plan_for(Framework::DeepSpeed);
  ASSERT_TRUE(deepspeed.pipeline);
  EXPECT_EQ(deepspeed.pipeline->tensor_parallel, 1);
  EXPECT_EQ(deepspeed.pipeline->pipeline_stages, 1);
  EXPECT_FALSE(export_launch(deepspeed, {Framework::DeepSpeed, false}).nearest);
  try {
    plan_for(Framework::DeepSpeed, 2);
    ADD_FAILURE() << "planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tp 2 asks for Megatron-DeepSpeed's model-parallel GPT, "
                                         "which cannot build this model (Megatron-DeepSpeed has "
                                         "no rope scaling ('llama3'))"),
              std::string::npos)
        << e.what();
  }
}

// What stops a framework in every layout, asked before the search: Llama 2 7B's shape is no
// torchtitan flavor, Megatron-LM and DeepSpeed train it; a model that is no decoder has no such
// layout, so nothing is said (the search and --launchable say why).
TEST(LauncherVerdicts, ModelRefusalsNameWhatNoLayoutChanges) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  const Graph llama = load_model_for_devices("llama-7b", 16, 64);
  const auto titan = model_refusals(llama, machine, Framework::Torchtitan);
  ASSERT_EQ(titan.size(), 1u);
  EXPECT_EQ(titan[0].rfind("torchtitan's llama3 has no flavor of this shape", 0), 0u) << titan[0];
  EXPECT_TRUE(model_refusals(llama, machine, Framework::Megatron).empty());
  EXPECT_TRUE(model_refusals(llama, machine, Framework::DeepSpeed).empty());
  EXPECT_TRUE(
      model_refusals(load_model_for_devices("mnist-mlp", 16, 0), machine, Framework::Megatron)
          .empty());
}

// What optimize states beside a decoder's plan: each launcher's verdict, one reason where the
// joint search's own layout stops them all, nothing for a model no launcher trains.
TEST(LauncherVerdicts, EachFrameworkAndItsFirstReason) {
  const Plan expert = expert_plan(debug_llama(32), 8, grid(1, 2, 4, 3));
  const auto runs = launcher_verdicts(expert);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->verdicts.size(), 3u);
  EXPECT_FALSE(runs->searched_own_way);
  EXPECT_TRUE(runs->verdicts[0].runs());  // Megatron-LM: interleaved chunks of whole layers
  EXPECT_EQ(runs->verdicts[2].framework, Framework::DeepSpeed);
  EXPECT_FALSE(runs->verdicts[2].runs());  // no interleaved schedule
  EXPECT_EQ(runs->describe().rfind("Megatron-LM", 0), 0u) << runs->describe();
  EXPECT_NE(runs->describe().find("; DeepSpeed does not: DeepSpeed's pipeline engine has no "
                                  "interleaved schedule"),
            std::string::npos)
      << runs->describe();

  auto j = plan_to_json(expert);
  auto& stages = j["pipeline"]["stages"];
  for (std::size_t c = 0; c + 1 < stages.size(); ++c)
    stages[c]["layers"][1] = stages[c + 1]["layers"][0];
  const auto cut = launcher_verdicts(plan_from_json(j));
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->searched_own_way);
  for (const auto& v : cut->verdicts) EXPECT_FALSE(v.runs());
  EXPECT_EQ(cut->describe().rfind("no launcher runs it as it is: model chunk 0 ends inside", 0), 0u)
      << cut->describe();

  OptimizeOptions o;
  o.mode = "data-parallel";
  EXPECT_FALSE(launcher_verdicts(
      optimize_plan(load_model_for_devices("mnist-mlp", 4), load_machine("dgx-a100", {0, 4}), o)));
}

TEST(ExportNames, FrameworkNamesAreRead) {
  EXPECT_EQ(framework_from_string("torchtitan"), Framework::Torchtitan);
  EXPECT_THROW(framework_from_string("jax"), InputError);
  for (auto list :
       {NameList::Megatron, NameList::MegatronDeepSpeed, NameList::Torchtitan, NameList::DeepSpeed})
    EXPECT_GT(accepted_names(list).size(), 50u);
}

namespace {

// A plan with the sequence split over 2 devices: Megatron-LM's --context-parallel-size and
// --cp-comm-type, torchtitan's context_parallel_degree; DeepSpeed has no context parallelism, and
// --nearest re-plans without it (twice the copies).
TEST(ContextParallelExport, MegatronAndTorchtitanSplitTheSequenceDeepSpeedRefuses) {
  LayoutRequest layout = grid(2, 2, 2, 1);
  layout.context_parallel = 2;
  layout.context_exchange = ContextExchange::AllGather;
  const Plan plan = round_trip(expert_plan(debug_llama(32), 16, layout));
  ASSERT_TRUE(plan.pipeline);
  ASSERT_EQ(plan.pipeline->context_parallel, 2);
  EXPECT_EQ(plan.pipeline->data_parallel, 2);
  const auto megatron = script_args(export_launch(plan, {Framework::Megatron, false}).file.text);
  EXPECT_EQ(megatron.at("--context-parallel-size"), "2");
  EXPECT_EQ(megatron.at("--cp-comm-type"), "all_gather");
  EXPECT_EQ(megatron.at("--tensor-model-parallel-size"), "2");
  EXPECT_EQ(megatron.at("--global-batch-size"), "32");
  const LaunchFile titan = exported(plan, Framework::Torchtitan);
  expect_known_names(titan);
  EXPECT_EQ(toml_keys(titan.text)["parallelism.context_parallel_degree"], "2");
  EXPECT_THROW(export_launch(plan, {Framework::DeepSpeed, false}), InputError);
  const ExportResult r = export_launch(plan, {Framework::DeepSpeed, true});
  ASSERT_TRUE(r.nearest);
  EXPECT_EQ(r.spec.cp, 1);
  EXPECT_EQ(r.spec.dp, 4);
  ASSERT_FALSE(r.refused.empty());
  EXPECT_NE(r.refused[0].find("no context parallelism"), std::string::npos) << r.refused[0];
  // torchtitan splits the sequence by TP x 2 x CP (ParallelDims.seq_len_divisor, asserted by
  // every model's parallelize): 8 here, which 36 tokens are not a multiple of.
  LaunchSpec odd = *launch_spec_of(plan).spec;
  odd.model.seq = 36;
  const auto why = cannot_run(odd, Framework::Torchtitan);
  EXPECT_TRUE(std::any_of(why.begin(), why.end(), [](const std::string& w) {
    return w == "torchtitan needs the sequence divisible by TP x 2 x CP (8): 36 tokens";
  }));
  odd.model.seq = 40;
  const auto fine = cannot_run(odd, Framework::Torchtitan);
  EXPECT_TRUE(std::none_of(fine.begin(), fine.end(), [](const std::string& w) {
    return w.find("divisible by TP x 2 x CP") != std::string::npos;
  }));
  // Megatron's sequence parallelism scatters each CP rank's share over TP (mappings.py asserts
  // it divides): 42 tokens are 21 a CP rank, which TP 2 does not split; 44 are 22.
  odd.sequence_parallel = true;
  odd.model.seq = 42;
  for (const Framework f : {Framework::Megatron, Framework::DeepSpeed}) {
    const auto refused = cannot_run(odd, f);
    EXPECT_TRUE(std::any_of(refused.begin(), refused.end(), [](const std::string& w) {
      return w ==
             "rule 'sequence parallelism splits each rank's sequence over TP': 42 tokens over CP "
             "2 on TP 2";
    }));
  }
  // Transformer Engine's context parallelism takes multi-head latent attention only by a ring:
  // the plan's all-gather is refused for it.
  LaunchSpec latent = *launch_spec_of(plan).spec;
  latent.model.mla = LatentAttentionShape{0, 16, 16, 8, 16};
  const auto ringless = cannot_run(latent, Framework::Megatron);
  EXPECT_TRUE(std::any_of(ringless.begin(), ringless.end(), [](const std::string& w) {
    return w.find("multi-head latent attention only by a ring") != std::string::npos;
  }));
  odd.model.seq = 44;
  const auto splits = cannot_run(odd, Framework::Megatron);
  EXPECT_TRUE(std::none_of(splits.begin(), splits.end(), [](const std::string& w) {
    return w.find("sequence parallelism splits") != std::string::npos;
  }));
}

}  // namespace

// Megatron-LM's FP8 Llama 3 70B, planned with its script's recipe (tests/h100_dense_runs.h): the
// weights of fp8 GEMMs held in fp8 and the gradients reduced in bf16 travel in the plan file and
// are written as Megatron-LM and torchtitan take them.
TEST(Fp8RecipeExport, Llama3_70bFlagsAndKeys) {
  const Plan plan = plan_from_json(plan_to_json(optimize_plan(
      h100::fp8_llama70b_model(), load_machine("dgx-h100", {0, 64}), h100::fp8_llama70b_layout())));
  ASSERT_TRUE(plan.pipeline);
  EXPECT_TRUE(plan.pipeline->fp8_param_gather);
  EXPECT_TRUE(plan.pipeline->grad_reduce_in_bf16);
  const LaunchFile meg = export_launch(plan, {Framework::Megatron, false}).file;
  expect_known_names(meg);
  const auto args = script_args(meg.text);
  EXPECT_TRUE(args.count("--fp8-param-gather"));
  EXPECT_TRUE(args.count("--grad-reduce-in-bf16"));
  EXPECT_EQ(args.at("--fp8-format"), "hybrid");
  const LaunchFile titan = export_launch(plan, {Framework::Torchtitan, true}).file;
  expect_known_names(titan);
  auto keys = toml_keys(titan.text);
  EXPECT_EQ(keys["training.mixed_precision_reduce"], "\"bfloat16\"");
  EXPECT_EQ(keys["quantize.linear.float8.enable_fsdp_float8_all_gather"], "true");
}
