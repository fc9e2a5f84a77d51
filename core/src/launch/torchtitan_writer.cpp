// A torchtitan job TOML (key names: torchtitan v0.2.2's torchtitan/config/job_config.py). The
// model is one of torchtitan's registered llama3 flavors (torchtitan/models/llama3/__init__.py),
// whose sizes a TOML cannot change; pipeline chunks are given layer by layer
// (module_fqns_per_model_part), so any cut between whole layers is kept.
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

std::vector<std::string> torchtitan_cannot_run(const LaunchSpec& s) {
  std::vector<std::string> out;
  const ModelShape& m = s.model;
  const bool llama = m.rotary && m.rms_norm && m.gated_mlp && m.activation == "silu" &&
                     !m.mlp_bias && !m.attention_bias && !m.qkv_bias && !m.qk_norm &&
                     !m.parallel_residual && !m.sandwich_norms && !m.tied;
  if (!llama)
    out.push_back(
        "torchtitan's llama3 is a Llama decoder (RMSNorm, SwiGLU, rotary, no biases, untied "
        "head); this model is not");
  else if (!llama3_flavor(m))
    out.push_back(fmt::format(
        "torchtitan's llama3 has no flavor of this shape (dim {}, {} layers, {} heads, {} KV "
        "heads, FFN {}, vocabulary {}); its flavors are debugmodel, 8B, 70B and 405B, and a "
        "TOML cannot change their sizes",
        m.hidden, m.layers, m.heads, m.kv_heads, m.ffn, m.vocab));
  if (s.dtype == "fp16")
    out.push_back("torchtitan trains in bfloat16 or float32 (mixed_precision_param), not float16");
  if (m.sliding_window > 0 && m.sliding_window < m.seq)
    out.push_back("torchtitan's llama3 has no sliding-window attention");
  return out;
}

}  // namespace detail

LaunchFile write_torchtitan(const LaunchSpec& s) {
  const ModelShape& m = s.model;
  const Flavor* flavor = llama3_flavor(m);
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
  t.set("name", toml_string("llama3"));
  t.set("flavor", toml_string(flavor ? flavor->name : "?"));
  if (!m.hf_name.empty()) t.set("hf_assets_path", toml_string("./assets/hf/" + m.hf_name));
  if (s.dtype == "fp8") t.set("converters", "[\"quantize.linear.float8\"]");

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

  t.table("parallelism");
  int replicate = 1, shard = 1;
  std::string reshard;
  if (s.dp > 1) {
    if (s.zero_stage == 0 && s.tp == 1 && s.pp == 1) {
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
  }
  f.text = std::move(t.text);
  f.names = std::move(t.names);
  return f;
}

}  // namespace unity::launch
