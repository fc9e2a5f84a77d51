// A DeepSpeed config JSON (keys: DeepSpeed's deepspeed/runtime constants, ZeRO and activation
// checkpointing configs at 0.16.5-pre, 38327e07). With TP or PP > 1 the model parallelism is
// Megatron-DeepSpeed's (flags: its megatron/arguments.py at f4157bea), so the file is a shell
// script that writes the JSON and starts Megatron-DeepSpeed's pretrain_gpt.py with it.
#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "unity/core/launch/launch_writers.h"

namespace unity::launch {
namespace {

using nlohmann::json;

// Megatron-DeepSpeed's model where the plan has TP or PP, or experts (a DeepSpeed config alone
// holds no model).
bool model_parallel(const LaunchSpec& s) { return s.tp > 1 || s.pp > 1 || s.model.moe; }

// The config, and each leaf key's dotted name.
json deepspeed_config(const LaunchSpec& s, std::vector<std::pair<NameList, std::string>>& names) {
  json j = json::object();
  const auto set = [&](const std::string& section, const std::string& key, json value) {
    if (section.empty()) {
      j[key] = std::move(value);
      names.emplace_back(NameList::DeepSpeed, key);
    } else {
      j[section][key] = std::move(value);
      names.emplace_back(NameList::DeepSpeed, section + "." + key);
    }
  };
  set("", "train_batch_size", s.global_batch);
  set("", "train_micro_batch_size_per_gpu", s.micro_batch_size);
  set("", "gradient_accumulation_steps", s.micro_batches);
  if (s.dtype == "bf16") set("bf16", "enabled", true);
  if (s.dtype == "fp16") set("fp16", "enabled", true);
  set("zero_optimization", "stage", s.zero_stage);
  if (s.zero_stage > 0) set("zero_optimization", "overlap_comm", s.overlap_grad_reduce);
  if (s.recompute == Recompute::Full) {
    set("activation_checkpointing", "partition_activations", false);
    set("activation_checkpointing", "contiguous_memory_optimization", false);
    set("activation_checkpointing", "number_checkpoints", s.model.layers);
  }
  return j;
}

}  // namespace

namespace detail {

std::vector<std::string> megatron_deepspeed_lacks(const ModelShape& m) {
  std::vector<std::string> out;
  if (m.parallel_residual || m.sandwich_norms || m.post_norms || m.qk_norm || m.qk_norm_whole ||
      m.qkv_bias)
    out.push_back(
        "Megatron-DeepSpeed's GPT has no parallel residual, extra norms or q/k/v "
        "biases");
  if (m.gated_mlp != (m.activation == "silu"))
    out.push_back(fmt::format("Megatron-DeepSpeed's MLP is GELU or SwiGLU, not a {} {} MLP",
                              m.gated_mlp ? "gated" : "plain", m.activation));
  if (!m.rope_scaling.empty())
    out.push_back(fmt::format("Megatron-DeepSpeed has no rope scaling ('{}')", m.rope_scaling));
  if (m.rotary && m.nope_layers > 0)
    out.push_back(
        fmt::format("Megatron-DeepSpeed rotates every layer; {} of the model's {} have "
                    "no rotary embedding",
                    m.nope_layers, m.layers));
  if (m.rotary && m.rotary_fraction < 1)
    out.push_back(fmt::format("Megatron-DeepSpeed rotates every dimension of a head, not {}",
                              m.rotary_fraction));
  if (m.head_bias) out.push_back("Megatron-DeepSpeed's output layer has no bias (lm_head_bias)");
  if (m.multipliers)
    out.push_back("Megatron-DeepSpeed's GPT has no embedding, residual or logit multipliers");
  if (m.windowed()) out.push_back("Megatron-DeepSpeed has no sliding-window attention");
  if (m.mla) out.push_back("Megatron-DeepSpeed has no multi-head latent attention");
  return out;
}

std::vector<std::string> deepspeed_cannot_run(const LaunchSpec& s) {
  std::vector<std::string> out;
  if (s.dtype == "fp8") out.push_back("DeepSpeed has no fp8 training (bf16, fp16 or fp32)");
  if (s.recompute == Recompute::Selective && !s.recompute_modules.is_default())
    out.push_back(fmt::format(
        "Megatron-DeepSpeed's selective recomputation runs the attention's scores again, not "
        "the modules {} (Megatron-Core's --recompute-modules)",
        to_string(s.recompute_modules)));
  if (s.cp > 1)
    out.push_back(fmt::format(
        "DeepSpeed has no context parallelism (CP {}): its Ulysses sequence parallelism splits "
        "the attention heads by all-to-all, a different layout",
        s.cp));
  if (s.pp > 1 && s.zero_stage >= 2)
    out.push_back(fmt::format(
        "DeepSpeed's pipeline engine refuses ZeRO-{} (ZeRO-2 and ZeRO-3 are incompatible with "
        "pipeline parallelism)",
        s.zero_stage));
  if (s.interleave > 1)
    out.push_back("DeepSpeed's pipeline engine has no interleaved schedule (virtual stages)");
  const std::vector<int> stages = s.stage_layers();
  if (s.pp > 1 &&
      std::adjacent_find(stages.begin(), stages.end(), std::not_equal_to<>()) != stages.end())
    out.push_back(fmt::format(
        "DeepSpeed's pipeline gives every stage as many layers; the plan's stages hold [{}]",
        fmt::join(stages, ", ")));
  if (s.global_batch != s.micro_batch_size * s.dp * s.micro_batches)
    out.push_back(fmt::format(
        "train_batch_size = micro-batch x gradient accumulation x DP: {} != {} x {} x {}",
        s.global_batch, s.micro_batch_size, s.micro_batches, s.dp));
  if (!model_parallel(s)) {
    if (s.recompute == Recompute::Selective)
      out.push_back(
          "DeepSpeed's activation checkpointing recomputes whole layers, not the "
          "attention alone (selective recomputation is Megatron's)");
    return out;
  }
  // Megatron-DeepSpeed's model.
  const ModelShape& m = s.model;
  if (s.tp_comm_overlap)
    out.push_back("Megatron-DeepSpeed has no tensor-parallel communication overlap");
  if (auto v = detail::sequence_parallel_split_violation(s)) out.push_back(std::move(*v));
  for (auto& why : megatron_deepspeed_lacks(m)) out.push_back(std::move(why));
  if (m.heads % s.tp != 0 || m.kv_heads % s.tp != 0)
    out.push_back(fmt::format("TP {} does not divide the {} heads and {} KV heads", s.tp, m.heads,
                              m.kv_heads));
  if (const auto& e = m.moe) {
    // DeepSpeed's MoE layer (deepspeed/moe): a softmax gate picking 1 or 2 experts (top-2's
    // picked scores renormalised), experts that are copies of the dense MLP, spread over
    // data-parallel ranks (ep_size) and dispatched by its own all-to-all.
    if (e->top_k > 2)
      out.push_back(fmt::format("DeepSpeed's MoE gate picks 1 or 2 experts, not {}", e->top_k));
    if (e->sigmoid)
      out.push_back("DeepSpeed's MoE gate scores with a softmax, not a sigmoid");
    else if (e->top_k == 2 && !e->normalize_top_k)
      out.push_back("DeepSpeed's top-2 gate renormalises the two picked scores, the model's not");
    if (e->route_groups > 1)
      out.push_back(fmt::format(
          "DeepSpeed's MoE gate picks from every expert, not from the best {} of {} groups",
          e->route_group_top_k, e->route_groups));
    if (e->shared_ffn > 0)
      out.push_back(
          "DeepSpeed's MoE has no shared experts (its residual MoE mixes a dense MLP in by a "
          "learned coefficient)");
    if (e->dense_layers() > 0 && m.ffn != e->expert_ffn)
      out.push_back(
          fmt::format("DeepSpeed's experts are copies of the dense MLP ({} wide), not {} wide",
                      m.ffn, e->expert_ffn));
    if (s.tp > 1)
      out.push_back(fmt::format(
          "DeepSpeed spreads the experts over data-parallel copies only (ep_size), not over the "
          "plan's TP group of {}",
          s.tp));
    else if (s.dp % s.ep != 0)
      out.push_back(
          fmt::format("DeepSpeed's EP {} must divide the {} data-parallel copies", s.ep, s.dp));
    if (s.dispatcher == TokenDispatcher::DeepEp)
      out.push_back("DeepSpeed dispatches tokens with its own all-to-all, not DeepEP");
    if (s.ep_comm_overlap)
      out.push_back("DeepSpeed does not overlap the experts' all-to-alls with another micro-batch");
    if (s.zero_stage == 3) out.push_back("DeepSpeed's ZeRO-3 does not take MoE layers");
  }
  return out;
}

}  // namespace detail

LaunchFile write_deepspeed(const LaunchSpec& s) {
  LaunchFile f;
  if (s.grad_reduce_in_bf16)
    f.notes.push_back(
        "the plan keeps and reduces gradients in bf16; this config leaves DeepSpeed's "
        "gradient accumulation dtype at its default");
  const json config = deepspeed_config(s, f.names);
  const std::string header =
      fmt::format("Unity's plan for {} on {} ({} GPUs): {}; predicted {:.1f} ms per iteration ({})",
                  s.model_name, s.machine, s.devices, s.describe(), s.iteration_ms, s.origin);
  if (!model_parallel(s)) {
    // JSON has no comments: the plan is said beside it (the CLI prints the notes).
    f.notes.push_back("DeepSpeed config of " + header);
    f.text = config.dump(2) + "\n";
    return f;
  }
  const ModelShape& m = s.model;
  detail::ArgList args{NameList::MegatronDeepSpeed, {}, {}};
  const auto num = [](auto v) { return fmt::format("{}", v); };
  args.add("--num-layers", num(m.layers));
  args.add("--hidden-size", num(m.hidden));
  args.add("--num-attention-heads", num(m.heads));
  if (m.kv_heads != m.heads) args.add("--num-key-value-heads", num(m.kv_heads));
  if (m.kv_channels() * m.heads != m.hidden) args.add("--kv-channels", num(m.kv_channels()));
  args.add("--ffn-hidden-size", num(m.ffn));
  args.add("--seq-length", num(m.seq));
  args.add("--max-position-embeddings",
           num(m.positions > 0 ? m.positions : std::max(m.max_positions, m.seq)));
  if (m.rotary) {
    args.add("--use-rotary-position-embeddings");
    args.add("--no-position-embedding");
    if (m.rope_theta > 0)
      args.add("--rotary-position-embeddings-theta", num(static_cast<std::int64_t>(m.rope_theta)));
  }
  args.add("--normalization", m.rms_norm ? "rmsnorm" : "layernorm");
  if (m.gated_mlp) args.add("--swiglu");
  if (!m.mlp_bias) args.add("--disable-bias-linear");
  if (!m.tied) args.add("--untie-embeddings-and-output-weights");
  args.add("--make-vocab-size-divisible-by", num(detail::vocab_divisor(m.vocab, s.tp)));
  args.add("--attention-dropout", "0.0");
  args.add("--hidden-dropout", "0.0");
  if (const auto& e = m.moe) {
    // Every layer a candidate (interval 1), the dense ones listed with 1 expert.
    std::string counts = fmt::format("{}", e->experts);
    if (e->dense_layers() > 0) {
      std::vector<std::int64_t> per_layer;
      for (int l : e->layers) per_layer.push_back(l ? e->experts : 1);
      counts = fmt::format("{}", fmt::join(per_layer, " "));
    }
    args.add("--num-experts", counts);
    args.add("--expert-interval", "1");
    args.add("--topk", num(e->top_k));
    args.add("--mlp-type", "standard");
    args.add("--moe-expert-parallel-size", num(s.ep));
    // DeepSpeed's gate pads each expert's tokens to its capacity and drops the rest.
    if (s.expert_load.dropless())
      args.add("--disable-moe-token-dropping");
    else
      args.add("--moe-train-capacity-factor", fmt::format("{}", s.expert_load.capacity_factor));
    if (s.zero_stage > 0) args.add("--create-moe-param-group");
  }
  args.add("--tensor-model-parallel-size", num(s.tp));
  args.add("--pipeline-model-parallel-size", num(s.pp));
  if (s.pp == 1) args.add("--no-pipeline-parallel");
  if (s.sequence_parallel && s.tp > 1) args.add("--sequence-parallel");
  args.add("--micro-batch-size", num(s.micro_batch_size));
  args.add("--global-batch-size", num(s.global_batch));
  if (s.recompute == Recompute::Full) {
    args.add("--checkpoint-activations");
    args.add("--deepspeed-activation-checkpointing");
  } else if (s.recompute == Recompute::Selective) {
    args.add("--recompute-granularity", "selective");
  }
  if (s.dtype == "bf16") args.add("--bf16");
  if (s.dtype == "fp16") args.add("--fp16");
  args.add("--optimizer", s.optimizer == "adam" ? "adam" : "sgd");
  args.add("--deepspeed");
  args.add("--deepspeed_config", "\"${DS_CONFIG:-ds_config.json}\"");
  args.add("--zero-stage", num(s.zero_stage));
  args.add("--data-path", "\"${DATA_PATH}\"");
  if (!m.hf_architecture.empty()) {
    args.add("--tokenizer-type", "HFTokenizer");
    args.add("--tokenizer-model", "\"${TOKENIZER_MODEL}\"");
  } else {
    args.add("--tokenizer-type", "GPT2BPETokenizer");
    args.add("--vocab-file", "\"${VOCAB_FILE}\"");
    args.add("--merge-file", "\"${MERGE_FILE}\"");
  }
  args.add("--train-iters", "\"${TRAIN_ITERS:-1000}\"");
  args.add("--lr", "\"${LR:-3.0e-4}\"");
  f.text = fmt::format(
      "#!/usr/bin/env bash\n"
      "# Megatron-DeepSpeed launch of {}\n"
      "# Config keys from DeepSpeed 0.16.5-pre (38327e07), flags from Megatron-DeepSpeed "
      "(f4157bea).\n"
      "# Set DATA_PATH and the tokenizer's files, then run this from Megatron-DeepSpeed's "
      "folder on every node.\n"
      "set -euo pipefail\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "DS_CONFIG=\"${{DS_CONFIG:-ds_config.json}}\"\n"
      "cat > \"$DS_CONFIG\" <<'JSON'\n{}\nJSON\n\nARGS=(\n",
      header, config.dump(2));
  for (const auto& line : args.lines) f.text += "  " + line + "\n";
  f.text += ")\n\n" + detail::torchrun_lines(s, "pretrain_gpt.py", {"ARGS"});
  f.names.insert(f.names.end(), args.names.begin(), args.names.end());
  return f;
}

}  // namespace unity::launch
