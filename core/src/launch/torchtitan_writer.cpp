// A torchtitan job TOML (key names: torchtitan v0.2.2's torchtitan/config/job_config.py). The
// model is one of torchtitan's registered flavors (llama3's for a dense decoder, deepseek_v3's,
// qwen3's and gpt_oss's for a mixture of experts), whose sizes a TOML cannot change; pipeline
// chunks are given layer by layer (module_fqns_per_model_part), so any cut between whole layers is
// kept.
#include <cmath>

#include <fmt/format.h>

#include "unity/core/launch/launch_writers.h"

namespace unity::launch {
namespace {

// torchtitan's llama3 flavors at v0.2.2, with the FFN width its model computes from
// ffn_dim_multiplier and multiple_of.
struct Flavor {
  const char* name;
  std::int64_t dim, layers, heads, kv_heads, vocab;
  double ffn_multiplier;  // 0: none
  std::int64_t multiple_of;
  double rope_theta;
  std::int64_t ffn() const {
    std::int64_t h = 2 * (4 * dim) / 3;
    if (ffn_multiplier > 0) h = static_cast<std::int64_t>(ffn_multiplier * static_cast<double>(h));
    return multiple_of * ((h + multiple_of - 1) / multiple_of);
  }
};

constexpr Flavor kLlama3Flavors[] = {
    {"debugmodel", 256, 6, 16, 16, 2048, 0, 256, 500000},
    {"8B", 4096, 32, 32, 8, 128256, 1.3, 1024, 500000},
    {"70B", 8192, 80, 64, 8, 128256, 1.3, 4096, 500000},
    {"405B", 16384, 126, 128, 8, 128256, 1.2, 4096, 500000},
};

const Flavor* llama3_flavor(const ModelShape& m) {
  for (const Flavor& f : kLlama3Flavors)
    if (f.dim == m.hidden && f.layers == m.layers && f.heads == m.heads &&
        f.kv_heads == m.kv_heads && f.vocab == m.vocab && f.ffn() == m.ffn &&
        m.kv_channels() == f.dim / f.heads && (m.rope_theta == 0 || m.rope_theta == f.rope_theta))
      return &f;
  return nullptr;
}

// torchtitan's mixture-of-experts flavors at v0.2.2 (torchtitan/models/{deepseek_v3,qwen3,
// gpt_oss}/__init__.py), as the shapes Unity reads off a graph: routed experts of expert_ffn
// (MoEArgs), shared experts' MLP together (num_shared_experts x moe_inter_dim), dense layers
// first (n_dense_layers, inter_dim), DeepSeek's latent attention. Whether the model's train spec
// pipelines (qwen3 and gpt_oss have no pipelining_fn) and whether its attention is SDPA, the only
// one torchtitan's context parallelism takes (the DeepSeek flavors but debugmodel and gpt_oss
// attend with FlexAttention).
struct MoeFlavor {
  const char* model;
  const char* name;
  std::int64_t dim, layers, heads, kv_heads, head_dim, vocab;
  std::int64_t dense_first, dense_ffn;
  std::int64_t experts, top_k, expert_ffn, shared_ffn;
  std::int64_t route_groups, route_group_top_k;  // router_num_expert_groups, _limited_groups
  bool sigmoid, route_norm;
  std::int64_t q_lora, kv_lora, qk_nope, qk_rope;  // kv_lora 0: grouped-query attention
  bool attention_bias;
  bool pipelines, sdpa;
};

constexpr MoeFlavor kMoeFlavors[] = {
    {"deepseek_v3", "16B", 2048, 27,    16,    16, 128, 102400, 1,  10944, 64,   6,    1408,
     2 * 1408,      0,     0,    false, false, 0,  512, 128,    64, false, true, false},
    {"deepseek_v3", "236B", 5120, 60,    128,   128,  128, 102400, 1,  12288, 160,  6,    1536,
     2 * 1536,      8,      3,    false, false, 1536, 512, 128,    64, false, true, false},
    {"deepseek_v3", "671B", 7168, 61,   128,  128,  128, 129280, 3,  18432, 256,  8,    2048,
     2048,          8,      4,    true, true, 1536, 512, 128,    64, false, true, false},
    {"qwen3", "30B-A3B", 2048, 48,    32,   4, 128, 151936, 0, 0,     128,   8,   768,
     0,       0,         0,    false, true, 0, 0,   0,      0, false, false, true},
    {"qwen3", "235B-A22B", 4096, 94,    64,   4, 128, 151936, 0, 0,     128,   8,   1536,
     0,       0,           0,    false, true, 0, 0,   0,      0, false, false, true},
    {"gpt_oss", "20b", 2880, 24,    64,   8, 64, 201088, 0, 0,    32,    4,    2880,
     0,         0,     0,    false, true, 0, 0,  0,      0, true, false, false},
    {"gpt_oss", "120b", 2880, 36,    64,   8, 64, 201088, 0, 0,    128,   4,    2880,
     0,         0,      0,    false, true, 0, 0,  0,      0, true, false, false},
};

// A flavor is a SwiGLU decoder with RMSNorm before its blocks, rotary positions and an untied head.
const MoeFlavor* moe_flavor(const ModelShape& m) {
  const bool swiglu_decoder = m.rotary && m.rms_norm && m.gated_mlp && m.activation == "silu" &&
                              !m.mlp_bias && !m.parallel_residual && !m.sandwich_norms &&
                              !m.post_norms && !m.tied;
  if (!m.moe || !swiglu_decoder) return nullptr;
  const MoeShape& e = *m.moe;
  for (const MoeFlavor& f : kMoeFlavors) {
    bool dense_first = e.dense_layers() == f.dense_first;
    for (std::size_t i = 0; i < e.layers.size(); ++i)
      dense_first =
          dense_first && (e.layers[i] == 1) == (static_cast<std::int64_t>(i) >= f.dense_first);
    const bool attention =
        f.kv_lora > 0 ? m.mla && m.mla->q_lora_rank == f.q_lora &&
                            m.mla->kv_lora_rank == f.kv_lora && m.mla->qk_head_dim == f.qk_nope &&
                            m.mla->qk_rope_head_dim == f.qk_rope && m.mla->v_head_dim == f.head_dim
                      : !m.mla && m.kv_heads == f.kv_heads && m.kv_channels() == f.head_dim;
    if (f.dim == m.hidden && f.layers == m.layers && f.heads == m.heads && f.vocab == m.vocab &&
        attention && dense_first && (f.dense_first == 0 || f.dense_ffn == m.ffn) &&
        e.experts == f.experts && e.top_k == f.top_k && e.expert_ffn == f.expert_ffn &&
        e.shared_ffn == f.shared_ffn && e.route_groups == f.route_groups &&
        e.route_group_top_k == f.route_group_top_k && e.sigmoid == f.sigmoid &&
        e.normalize_top_k == f.route_norm && m.attention_bias == f.attention_bias)
      return &f;
  }
  return nullptr;
}

// Writes `[section]` tables of key = value lines, recording each key's dotted name.
struct Toml {
  std::string text;
  std::vector<std::pair<NameList, std::string>> names;
  std::string section;
  void table(const std::string& name) {
    text += fmt::format("\n[{}]\n", name);
    section = name;
  }
  void set(const std::string& key, const std::string& value, const std::string& comment = {}) {
    text += fmt::format("{} = {}{}\n", key, value, comment.empty() ? "" : "  # " + comment);
    names.emplace_back(NameList::Torchtitan, section + "." + key);
  }
};

std::string toml_string(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

namespace detail {

std::optional<TorchtitanFlavorLimits> torchtitan_moe_flavor(const ModelShape& m) {
  const MoeFlavor* f = moe_flavor(m);
  if (!f) return std::nullopt;
  return TorchtitanFlavorLimits{fmt::format("{} {}", f->model, f->name), f->pipelines, f->sdpa,
                                std::string(f->model) != "deepseek_v3"};
}

std::vector<std::string> torchtitan_cannot_run(const LaunchSpec& s) {
  std::vector<std::string> out;
  const ModelShape& m = s.model;
  if (s.recompute == Recompute::Selective && !s.recompute_modules.is_default())
    out.push_back(fmt::format(
        "torchtitan's selective activation checkpointing picks operators by its own policy, not "
        "the modules {} (Megatron-Core's --recompute-modules)",
        to_string(s.recompute_modules)));
  if (s.dtype == "fp16")
    out.push_back("torchtitan trains in bfloat16 or float32 (mixed_precision_param), not float16");
  // ParallelDims.seq_len_divisor, which every model's parallelize asserts: its sequence-parallel
  // TP splits the sequence, and its context parallelism into 2 x CP chunks.
  if (const std::int64_t divisor = std::int64_t{s.tp} * 2 * s.cp; m.seq % divisor != 0)
    out.push_back(fmt::format(
        "torchtitan needs the sequence divisible by TP x 2 x CP ({}): {} tokens", divisor, m.seq));
  if (m.moe) {
    const MoeFlavor* f = moe_flavor(m);
    if (!f) {
      out.push_back(fmt::format(
          "torchtitan has no mixture-of-experts flavor of this shape (dim {}, {} layers, {} "
          "experts of {}, top {}{}); its flavors are deepseek_v3 16B, 236B and 671B, qwen3 "
          "30B-A3B and 235B-A22B, gpt_oss 20b and 120b (and llama4's), and a TOML cannot "
          "change their sizes",
          m.hidden, m.layers, m.moe->experts, m.moe->expert_ffn, m.moe->top_k,
          m.mla ? ", latent attention" : ""));
      return out;
    }
    if (s.pp > 1 && !f->pipelines)
      out.push_back(fmt::format(
          "torchtitan v0.2.2's {} has no pipeline parallelism (its train spec has no pipelining "
          "function): PP {}",
          f->model, s.pp));
    if (s.cp > 1 && !f->sdpa)
      out.push_back(fmt::format(
          "torchtitan's {} {} attends with FlexAttention, which its context parallelism does not "
          "take (SDPA only): CP {}",
          f->model, f->name, s.cp));
    if (s.dispatcher == TokenDispatcher::DeepEp && s.ep < 2)
      out.push_back(
          "torchtitan's DeepEP backend needs expert parallelism (expert_parallel_degree > 1)");
    if (s.etp != 1 && s.etp != s.tp)
      out.push_back(
          fmt::format("torchtitan's expert tensor parallelism is 1 or TP, not {}", s.etp));
    if (std::string(f->model) == "deepseek_v3" && s.tp > 1 && s.dtype == "fp8")
      out.push_back(
          "torchtitan's deepseek_v3 refuses float8 tensorwise scaling with tensor parallelism");
    return out;
  }
  const bool llama = !m.mla && m.rotary && m.rms_norm && m.gated_mlp && m.activation == "silu" &&
                     !m.mlp_bias && !m.attention_bias && !m.qkv_bias && !m.qk_norm &&
                     !m.qk_norm_whole && !m.head_bias && !m.multipliers && !m.parallel_residual &&
                     !m.sandwich_norms && !m.post_norms && !m.tied && m.rotary_fraction == 1 &&
                     m.nope_layers == 0 && m.attention_chunk == 0 && !m.qk_l2_norm;
  if (!llama)
    out.push_back(
        "torchtitan's llama3 is a Llama decoder (RMSNorm, SwiGLU, rotary on every layer, no "
        "biases, untied head); this model is not");
  else if (!llama3_flavor(m))
    out.push_back(fmt::format(
        "torchtitan's llama3 has no flavor of this shape (dim {}, {} layers, {} heads, {} KV "
        "heads, FFN {}, vocabulary {}); its flavors are debugmodel, 8B, 70B and 405B, and a "
        "TOML cannot change their sizes",
        m.hidden, m.layers, m.heads, m.kv_heads, m.ffn, m.vocab));
  if (m.windowed()) out.push_back("torchtitan's llama3 has no sliding-window attention");
  return out;
}

}  // namespace detail

LaunchFile write_torchtitan(const LaunchSpec& s) {
  const ModelShape& m = s.model;
  const Flavor* flavor = llama3_flavor(m);
  const MoeFlavor* moe = moe_flavor(m);
  LaunchFile f;
  Toml t;
  t.text = fmt::format(
      "# torchtitan job of Unity's plan for {} on {} ({} GPUs):\n"
      "#   {}\n"
      "#   predicted {:.1f} ms per iteration ({})\n"
      "# Key names from torchtitan v0.2.2. Run: CONFIG_FILE=<this file> ./run_train.sh\n",
      s.model_name, s.machine, s.devices, s.describe(), s.iteration_ms, s.origin);
  t.table("job");
  t.set("description", toml_string("Unity plan: " + s.describe()));

  t.table("model");
  t.set("name", toml_string(moe ? moe->model : "llama3"));
  t.set("flavor", toml_string(moe ? moe->name : flavor ? flavor->name : "?"));
  if (!m.hf_name.empty()) t.set("hf_assets_path", toml_string("./assets/hf/" + m.hf_name));
  if (s.dtype == "fp8")
    t.set("converters", m.moe ? "[\"quantize.linear.float8\", \"quantize.grouped_mm.float8\"]"
                              : "[\"quantize.linear.float8\"]");

  t.table("training");
  // With stages, a step's local batch is the pipeline's micro-batches; without, the optimizer
  // step accumulates the micro-batches (global / (local x DP) of them).
  const std::int64_t local = s.pp > 1 ? s.micro_batch_size * s.micro_batches : s.micro_batch_size;
  t.set("local_batch_size", fmt::format("{}", local));
  t.set("global_batch_size", fmt::format("{}", s.global_batch),
        s.pp == 1 && s.micro_batches > 1 ? fmt::format("{} accumulation steps", s.micro_batches)
                                         : std::string());
  t.set("seq_len", fmt::format("{}", m.seq));
  t.set("mixed_precision_param", toml_string(s.dtype == "fp32" ? "float32" : "bfloat16"));
  if (s.grad_reduce_in_bf16) t.set("mixed_precision_reduce", toml_string("bfloat16"));

  t.table("parallelism");
  int replicate = 1, shard = 1;
  std::string reshard;
  if (s.dp > 1) {
    // torchtitan's experts shard over FSDP's mesh (efsdp), so an MoE model shards.
    if (s.zero_stage == 0 && s.tp == 1 && s.pp == 1 && !m.moe) {
      replicate = s.dp;  // DDP: torchtitan's replicate, on a one-dimensional mesh only
    } else {
      shard = s.dp;
      reshard = s.zero_stage == 3 ? "always" : "never";
      if (s.zero_stage < 3)
        f.notes.push_back(fmt::format(
            "torchtitan shards data parallelism with FSDP2 (ZeRO-3's layout); the plan's "
            "ZeRO-{} is nearest with fsdp_reshard_after_forward = \"never\" (weights kept "
            "gathered from the forward to the backward)",
            s.zero_stage));
    }
  }
  t.set("data_parallel_replicate_degree", fmt::format("{}", replicate));
  t.set("data_parallel_shard_degree", fmt::format("{}", shard));
  if (!reshard.empty()) t.set("fsdp_reshard_after_forward", toml_string(reshard));
  t.set("tensor_parallel_degree", fmt::format("{}", s.tp));
  if (s.tp > 1 && !s.sequence_parallel)
    f.notes.push_back(
        "torchtitan's tensor parallelism always splits the norms along the "
        "sequence (sequence parallelism), which the plan did not");
  if (s.tp_comm_overlap) t.set("enable_async_tensor_parallel", "true");
  t.set("pipeline_parallel_degree", fmt::format("{}", s.pp));
  if (s.pp > 1) {
    t.set("pipeline_parallel_schedule", toml_string(s.interleave > 1 ? "Interleaved1F1B" : "1F1B"));
    t.set("pipeline_parallel_microbatch_size", fmt::format("{}", s.micro_batch_size));
    std::string parts = "[\n";
    int layer = 0;
    for (std::size_t c = 0; c < s.chunk_layers.size(); ++c) {
      std::vector<std::string> fqns;
      if (c == 0) fqns.push_back(toml_string("tok_embeddings"));
      for (int i = 0; i < s.chunk_layers[c]; ++i)
        fqns.push_back(toml_string(fmt::format("layers.{}", layer++)));
      if (c + 1 == s.chunk_layers.size()) {
        fqns.push_back(toml_string("norm"));
        fqns.push_back(toml_string("output"));
      }
      parts += fmt::format("  [{}],\n", fmt::join(fqns, ", "));
    }
    t.set("module_fqns_per_model_part", parts + "]");
  }
  t.set("context_parallel_degree", fmt::format("{}", s.cp));
  if (m.moe) {
    t.set("expert_parallel_degree", fmt::format("{}", s.ep));
    t.set("expert_tensor_parallel_degree", fmt::format("{}", s.etp));
    if (s.dispatcher == TokenDispatcher::DeepEp)
      t.set("expert_parallel_comm_backend", toml_string("deepep"));
    if (!s.expert_load.dropless())
      f.notes.push_back(fmt::format(
          "torchtitan routes tokens dropless; the plan's capacity factor {} (each expert padded "
          "to it, the rest dropped) is not written, and the experts' load will follow the router",
          s.expert_load.capacity_factor));
    if (s.ep_comm_overlap)
      f.notes.push_back(
          "torchtitan overlaps the experts' all-to-alls only in its DualPipeV schedule "
          "(pipeline_parallel_expert_parallel_overlap); the plan's overlap behind another "
          "micro-batch in 1F1B is not written, its all-to-alls run exposed");
  }
  if (s.cp > 1 && s.cp_exchange == ContextExchange::AllGather)
    f.notes.push_back(
        "torchtitan's context parallelism passes keys and values around a ring "
        "(context_parallel_rotate_method), not gathered once as the plan costs them");

  t.table("activation_checkpoint");
  if (s.recompute == Recompute::Selective) {
    t.set("mode", toml_string("selective"));
    t.set("selective_ac_option", toml_string("op"));
  } else {
    t.set("mode", toml_string(s.recompute == Recompute::Full ? "full" : "none"));
  }
  if (s.tp_comm_overlap) {
    t.table("compile");
    t.set("enable", "true", "async tensor parallelism runs under torch.compile");
  }
  if (s.dtype == "fp8") {
    t.table("quantize.linear.float8");
    t.set("recipe_name", toml_string("tensorwise"), "per-tensor scaling, as Unity costs fp8");
    if (s.fp8_param_gather)
      t.set("enable_fsdp_float8_all_gather", "true", "the weights gathered in fp8");
    if (m.moe) {
      t.table("quantize.grouped_mm.float8");
      t.set("fqns", "[\"experts\"]", "the experts' grouped GEMMs in fp8 too");
    }
  }
  f.text = std::move(t.text);
  f.names = std::move(t.names);
  return f;
}

}  // namespace unity::launch
