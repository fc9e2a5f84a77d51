// Megatron-LM's pretrain_gpt.py as a shell script (flag names: Megatron-LM core_v0.15.0's
// megatron/training/arguments.py), and the layout rules its argument checks and model builders
// enforce (validate_args, ColumnParallelLinear's divisions), checked before anything is written.
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <utility>

#include <fmt/format.h>

#include "unity/core/launch/launch_writers.h"
#include "unity/core/pipeline/alltoall_overlap.h"

namespace unity::launch {
namespace {

// Megatron-LM's ranks in order tp-dp-pp; Unity's other order is its --use-tp-pp-dp-mapping.
std::string order_name(DeviceOrder o) {
  return o == DeviceOrder::PipelineOutermost ? "tp-dp-pp" : "tp-pp-dp";
}

}  // namespace

namespace {

// Megatron-Core's expert grid and its MoE options' checks (TransformerConfig.__post_init__,
// core_v0.15.0).
std::vector<std::string> megatron_expert_violations(const LaunchSpec& s) {
  std::vector<std::string> out;
  const MoeShape& e = *s.model.moe;
  if (s.etp * s.ep * s.edp != s.tp * s.cp * s.dp)
    out.push_back(fmt::format(
        "rule 'the expert grid folds into the dense one (TP x CP x DP = ETP x EP x EDP per "
        "stage)': {} x {} x {} != {} x {} x {}",
        s.tp, s.cp, s.dp, s.etp, s.ep, s.edp));
  if (e.experts % s.ep != 0)
    out.push_back(
        fmt::format("rule 'EP divides the experts': {} experts on EP {}", e.experts, s.ep));
  if (e.expert_ffn % s.etp != 0)
    out.push_back(fmt::format("rule 'ETP divides the experts' FFN width': {} on ETP {}",
                              e.expert_ffn, s.etp));
  if (e.shared_ffn % s.tp != 0)
    out.push_back(fmt::format("rule 'TP divides the shared experts' width': {} on TP {}",
                              e.shared_ffn, s.tp));
  if (s.ep_comm_overlap)
    for (const AllToAllOverlapMiss& miss :
         alltoall_overlap_misses({s.ep, s.pp, s.interleave, s.recompute, s.dtype != "fp32"}))
      out.push_back(fmt::format("rule '--overlap-moe-expert-parallel-comm needs {}': {}",
                                miss.needs, miss.has));
  return out;
}

}  // namespace

namespace {

// YaRN on the latent attention: Megatron-LM's arguments set its factor, mscale and
// mscale_all_dim; the rest come from MLATransformerConfig's defaults (core_v0.15.0:
// original_max_position_embeddings 4096, beta_fast 32, beta_slow 1), which a config must match.
std::vector<std::string> yarn_violations(const ModelShape& m) {
  std::vector<std::string> out;
  for (const auto& [key, megatron] :
       {std::pair<const char*, double>{"original_max_position_embeddings", 4096},
        {"beta_fast", 32},
        {"beta_slow", 1}}) {
    const auto it = m.rope_scaling_params.find(key);
    if (it != m.rope_scaling_params.end() && it->second != megatron)
      out.push_back(fmt::format("YaRN's {} {} (Megatron-LM takes no argument for it and uses {})",
                                key, it->second, megatron));
  }
  return out;
}

}  // namespace

// Selective recomputation of any of Megatron-Core's modules in `bits` (RecomputeModules).
bool recomputes_any(const LaunchSpec& s, unsigned bits) {
  return s.recompute == Recompute::Selective && (s.recompute_modules.bits & bits) != 0;
}

// The norms or the experts' activation, which Megatron-Core's delayed fp8 scaling refuses to
// recompute.
bool recomputes_norm_or_expert_activation(const LaunchSpec& s) {
  return recomputes_any(s, RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation);
}

// The dtypes Megatron-Core's grouped GEMM for the experts runs (--moe-grouped-gemm).
bool runs_grouped_gemm(const LaunchSpec& s) { return s.dtype == "bf16" || s.dtype == "fp8"; }

bool uneven_chunks(const LaunchSpec& s) {
  return std::adjacent_find(s.chunk_layers.begin(), s.chunk_layers.end(), std::not_equal_to<>()) !=
         s.chunk_layers.end();
}

std::string pipeline_layout(const LaunchSpec& s) {
  // Megatron-Core's PipelineParallelLayerLayout: stages in model order (chunk c on pipeline rank
  // c % PP, as Unity places them), "|" between them, E the embedding, t a transformer layer, L
  // the loss; "t*n" and "(...|)*n" repeat.
  const auto chunk = [&](std::size_t c) {
    std::string text = c == 0 ? "E" : "";
    const int n = s.chunk_layers[c];
    if (n > 0) text += n == 1 ? "t" : fmt::format("t*{}", n);  // 0: the embedding or loss alone
    if (c + 1 == s.chunk_layers.size()) text += "L";
    return text;
  };
  std::string out;
  for (std::size_t c = 0; c < s.chunk_layers.size();) {
    std::size_t run = 1;
    if (c > 0)
      while (c + run + 1 < s.chunk_layers.size() && s.chunk_layers[c + run] == s.chunk_layers[c])
        ++run;
    if (!out.empty()) out += "|";
    out += run > 1 ? fmt::format("({}|)*{}", chunk(c), run - 1) + chunk(c + run - 1) : chunk(c);
    c += run;
  }
  return out;
}

std::vector<std::string> megatron_layout_violations(const LaunchSpec& s) {
  std::vector<std::string> out;
  const ModelShape& m = s.model;
  if (m.heads % s.tp != 0)
    out.push_back(
        fmt::format("rule 'TP divides the attention heads': {} heads on TP {}", m.heads, s.tp));
  if (m.kv_heads % s.tp != 0)
    out.push_back(fmt::format("rule 'TP divides the KV heads (query groups)': {} KV heads on TP {}",
                              m.kv_heads, s.tp));
  if ((!m.moe || m.moe->dense_layers() > 0) && m.ffn % s.tp != 0)
    out.push_back(fmt::format("rule 'TP divides the FFN width': {} on TP {}", m.ffn, s.tp));
  if (m.moe) {
    for (auto& v : megatron_expert_violations(s)) out.push_back(std::move(v));
  } else if (s.ep > 1 || s.etp > 1) {
    out.push_back(
        fmt::format("rule 'expert parallelism needs experts': EP {} on a dense model", s.ep));
  }
  const std::vector<int> stages = s.stage_layers();
  if (s.interleave > 1) {
    if (s.pp < 2)
      out.push_back(
          fmt::format("rule 'virtual stages need PP > 1': v{} on PP {}", s.interleave, s.pp));
    // Chunks of unequal layers are written as --pipeline-model-parallel-layout (see below).
  } else if (s.pp > 2 && std::adjacent_find(stages.begin() + 1, stages.end() - 1,
                                            std::not_equal_to<>()) != stages.end() - 1) {
    out.push_back(fmt::format(
        "rule 'PP cuts the layers evenly, only the first and last stage may hold fewer': stages "
        "of [{}] layers",
        fmt::join(stages, ", ")));
  }
  if (s.global_batch != s.micro_batch_size * s.dp * s.micro_batches)
    out.push_back(
        fmt::format("rule 'global batch = micro-batch x DP x accumulation': {} != {} x {} x {}",
                    s.global_batch, s.micro_batch_size, s.dp, s.micro_batches));
  if (s.tp_comm_overlap && !s.sequence_parallel)
    out.push_back("rule 'TP communication overlap needs sequence parallelism'");
  if (s.cp > 1 && m.seq % (2 * s.cp) != 0)
    out.push_back(fmt::format("rule 'the sequence splits into 2 x CP chunks': {} tokens on CP {}",
                              m.seq, s.cp));
  if (auto v = detail::sequence_parallel_split_violation(s)) out.push_back(std::move(*v));
  if (s.cp > 1 && m.mla && s.cp_exchange == ContextExchange::AllGather)
    out.push_back(
        "Transformer Engine's context parallelism takes multi-head latent attention only by a "
        "ring of keys and values (--cp-comm-type p2p), not by the plan's all-gather");
  if (s.cp > 1 && m.windowed() && s.cp_exchange == ContextExchange::Ring)
    out.push_back(
        "Transformer Engine's context parallelism takes a sliding window only by all-gathering the "
        "keys and values (--cp-comm-type all_gather), not by the plan's ring (p2p)");
  return out;
}

namespace detail {

std::vector<std::string> megatron_cannot_run(const LaunchSpec& s) {
  std::vector<std::string> out;
  const ModelShape& m = s.model;
  // What its layers lack, one flag of the model each.
  for (const auto& [lacks, why] : std::initializer_list<std::pair<bool, const char*>>{
           {m.parallel_residual, "pretrain_gpt.py's layers have no parallel residual (GPT-NeoX's)"},
           {m.post_norms,
            "pretrain_gpt.py's layers normalise before the attention and the MLP, not after them "
            "(OLMo 2's)"},
           {m.sandwich_norms,
            "pretrain_gpt.py's layers have no norms after the attention and the MLP (Gemma's)"},
           {m.attention_bias && !m.mlp_bias,
            "Megatron-LM biases every linear layer or none (--disable-bias-linear), not the "
            "attention's alone"},
           {m.qk_norm_whole,
            "--qk-layernorm normalises each head's queries and keys, not the whole projections "
            "(OLMoE's q and k norms)"},
           {m.head_bias, "pretrain_gpt.py's output layer has no bias (lm_head_bias)"},
           {m.multipliers,
            "pretrain_gpt.py has no embedding, residual or logit multipliers (Granite's "
            "embedding_multiplier, residual_multiplier, attention_multiplier, logits_scaling)"},
           {m.shared_expert_gate,
            "pretrain_gpt.py has no flag for a sigmoid gate on the shared expert (Qwen2-MoE's "
            "shared_expert_gate)"}})
    if (lacks) out.push_back(why);
  if (m.gated_mlp && m.activation != "silu")
    out.push_back(fmt::format("pretrain_gpt.py gates its MLP with SiLU only (--swiglu), not {}",
                              m.activation));
  if (!m.gated_mlp && m.activation != "gelu")
    out.push_back(fmt::format("pretrain_gpt.py's plain MLP is GELU's, not {}", m.activation));
  if (m.mla && !m.rope_scaling.empty() && m.rope_scaling != "yarn")
    out.push_back(fmt::format(
        "rope scaling '{}' on the latent attention (Megatron-LM's latent attention scales "
        "rotary embeddings by YaRN or not at all)",
        m.rope_scaling));
  else if (m.mla && m.rope_scaling == "yarn")
    for (auto& v : yarn_violations(m)) out.push_back(std::move(v));
  else if (!m.rope_scaling.empty() && m.rope_scaling != "llama3")
    out.push_back(fmt::format("rope scaling '{}' (Megatron-LM's --use-rope-scaling is Llama 3's)",
                              m.rope_scaling));
  if (!m.mla && m.rope_scaling == "llama3")
    // --use-rope-scaling takes the factor (--rope-scaling-factor); the frequency factors and the
    // original length are Llama 3.1's, fixed in RotaryEmbedding._apply_scaling.
    for (const auto& [key, fixed] : {std::pair{"low_freq_factor", 1.0},
                                     {"high_freq_factor", 4.0},
                                     {"original_max_position_embeddings", 8192.0}})
      if (auto it = m.rope_scaling_params.find(key);
          it != m.rope_scaling_params.end() && it->second != fixed)
        out.push_back(
            fmt::format("Llama 3 rope scaling with {} {} (--use-rope-scaling fixes it "
                        "at {})",
                        key, it->second, fixed));
  if (m.attention_chunk > 0 && m.attention_chunk < m.seq)
    out.push_back(fmt::format(
        "pretrain_gpt.py has no chunked attention (attention_chunk_size {}) at a sequence of {} "
        "tokens",
        m.attention_chunk, m.seq));
  if (m.nope_layers > 0 && (m.nope_interval == 0 || m.layers % m.nope_interval != 0))
    out.push_back(
        fmt::format("{} layers without rotary embeddings in no regular interval of the {} layers "
                    "(--no-rope-freq takes every N-th)",
                    m.nope_layers, m.layers));
  if (const auto& e = m.moe) {
    if (e->sigmoid && !e->normalize_top_k && e->top_k > 1)
      out.push_back(
          "a sigmoid router whose picked scores are not renormalised (Megatron-LM's sigmoid "
          "router divides them by their sum)");
    if (!e->sigmoid && e->normalize_top_k && e->top_k == 1)
      out.push_back(
          "a top-1 softmax router renormalised over its one pick (every token weighted 1): "
          "Megatron-Core refuses a softmax after a top-1 pick, whose gradient is zero, and weights "
          "by the pick's probability (--moe-router-pre-softmax)");
    if (m.router_score_correction && !e->sigmoid)
      out.push_back(
          "a routing-score correction on a softmax router (Megatron-LM's "
          "--moe-router-enable-expert-bias needs sigmoid scores)");
    if (m.expert_bias && !m.mlp_bias)
      out.push_back(
          "biases on the experts and the router alone (Megatron-LM biases every linear layer or "
          "none)");
    if (s.dispatcher == TokenDispatcher::DeepEp && !s.expert_load.dropless())
      out.push_back(
          "Megatron-Core's DeepEP dispatcher (flex) does not pad the experts' input to their "
          "capacity (--moe-pad-expert-input-to-capacity), as the plan's capacity factor is "
          "costed");
    if (!runs_grouped_gemm(s) && recomputes_any(s, RecomputeModules::kMoeActivation))
      out.push_back(fmt::format(
          "Megatron-Core recomputes moe_act only in its grouped GEMM (--moe-grouped-gemm), which "
          "is bf16's and fp8's, not {}",
          s.dtype));
  }
  for (auto& v : megatron_layout_violations(s)) out.push_back(std::move(v));
  return out;
}

}  // namespace detail

LaunchFile write_megatron(const LaunchSpec& s) {
  using detail::ArgList;
  const ModelShape& m = s.model;
  ArgList model{NameList::Megatron, {}, {}}, parallel{NameList::Megatron, {}, {}},
      batch{NameList::Megatron, {}, {}}, recompute{NameList::Megatron, {}, {}},
      precision{NameList::Megatron, {}, {}}, data{NameList::Megatron, {}, {}};
  const auto num = [](auto v) { return fmt::format("{}", v); };
  model.add("--num-layers", num(m.layers));
  model.add("--hidden-size", num(m.hidden));
  model.add("--num-attention-heads", num(m.heads));
  if (const auto& a = m.mla) {
    // Multi-head latent attention (MLATransformerConfig): its ranks and head sizes, plain rotary
    // embeddings (its default is YaRN's, and the fused rope kernel is YaRN's only).
    model.add("--multi-latent-attention");
    if (a->q_lora_rank > 0) model.add("--q-lora-rank", num(a->q_lora_rank));
    model.add("--kv-lora-rank", num(a->kv_lora_rank));
    model.add("--qk-head-dim", num(a->qk_head_dim));
    model.add("--qk-pos-emb-head-dim", num(a->qk_rope_head_dim));
    model.add("--v-head-dim", num(a->v_head_dim));
  } else {
    if (m.kv_heads != m.heads) {
      model.add("--group-query-attention");
      model.add("--num-query-groups", num(m.kv_heads));
    }
    if (m.kv_channels() * m.heads != m.hidden) model.add("--kv-channels", num(m.kv_channels()));
  }
  model.add("--ffn-hidden-size", num(m.ffn));
  model.add("--seq-length", num(m.seq));
  model.add("--max-position-embeddings",
            num(m.positions > 0 ? m.positions : std::max(m.max_positions, m.seq)));
  if (m.rotary) {
    model.add("--position-embedding-type", "rope");
    if (m.rope_theta > 0) model.add("--rotary-base", num(static_cast<std::int64_t>(m.rope_theta)));
    if (!m.mla && m.rotary_fraction < 1)
      model.add("--rotary-percent", fmt::format("{}", m.rotary_fraction));
    if (m.rope_scaling == "llama3") {
      model.add("--use-rope-scaling");
      if (auto it = m.rope_scaling_params.find("factor");
          it != m.rope_scaling_params.end() && it->second != 8.0)
        model.add("--rope-scaling-factor", fmt::format("{}", it->second));
    }
    if (m.nope_interval > 0 && m.nope_layers > 0) model.add("--no-rope-freq", num(m.nope_interval));
    if (m.mla && m.rope_scaling == "yarn") {
      // YaRN (MLATransformerConfig's default rope type), its factors from the config.
      const auto param = [&](const char* key, double fallback) {
        const auto it = m.rope_scaling_params.find(key);
        return fmt::format("{}", it != m.rope_scaling_params.end() ? it->second : fallback);
      };
      model.add("--rope-type", "yarn");
      model.add("--rotary-scaling-factor", param("factor", 1.0));
      model.add("--mscale", param("mscale", 1.0));
      model.add("--mscale-all-dim", param("mscale_all_dim", 0.0));
    } else if (m.mla) {
      model.add("--rope-type", "rope");
      model.add("--no-rope-fusion");
    }
  } else {
    model.add("--position-embedding-type", "learned_absolute");
  }
  model.add("--normalization", m.rms_norm ? "RMSNorm" : "LayerNorm");
  if (m.gated_mlp) model.add("--swiglu");
  if (!m.mlp_bias) model.add("--disable-bias-linear");
  if (m.qkv_bias) model.add("--add-qkv-bias");
  if (m.qk_norm) model.add("--qk-layernorm");
  if (m.qk_l2_norm) model.add("--qk-l2-norm");
  if (!m.tied) model.add("--untie-embeddings-and-output-weights");
  model.add("--make-vocab-size-divisible-by", num(detail::vocab_divisor(m.vocab, s.tp)));
  // Hugging Face's window counts the query itself; Transformer Engine's (left, right) the keys
  // before and after it. The layers that attend in full, 0s in Megatron-LM's per-layer list.
  if (m.windowed()) {
    model.add("--window-size", fmt::format("{},0", m.sliding_window - 1));
    if (!m.window_layers.empty())
      model.add("--window-attn-skip-freq", "\"" + python_list_expression(m.window_layers) + "\"");
  }
  model.add("--attention-dropout", "0.0");
  model.add("--hidden-dropout", "0.0");
  ArgList experts{NameList::Megatron, {}, {}};
  if (const auto& e = m.moe) {
    experts.add("--num-experts", num(e->experts));
    experts.add("--moe-ffn-hidden-size", num(e->expert_ffn));
    experts.add("--moe-router-topk", num(e->top_k));
    if (e->shared_ffn > 0) experts.add("--moe-shared-expert-intermediate-size", num(e->shared_ffn));
    experts.add("--moe-layer-freq", e->dense_layers() > 0 ? "\"" + e->layer_freq() + "\"" : "1");
    experts.add("--moe-router-score-function", e->sigmoid ? "sigmoid" : "softmax");
    // Megatron's softmax after the top-k is the softmax over all renormalised over the picked;
    // before it (pre-softmax), the picked scores as they are.
    if (!e->sigmoid && !e->normalize_top_k) experts.add("--moe-router-pre-softmax");
    if (m.router_score_correction) experts.add("--moe-router-enable-expert-bias");
    if (e->route_groups > 1) {
      experts.add("--moe-router-num-groups", num(e->route_groups));
      experts.add("--moe-router-group-topk", num(e->route_group_top_k));
    }
    if (m.router_probs_on_input) experts.add("--moe-apply-probs-on-input");
    if (runs_grouped_gemm(s)) experts.add("--moe-grouped-gemm");
    experts.add("--moe-token-dispatcher-type",
                s.dispatcher == TokenDispatcher::DeepEp ? "flex" : "alltoall");
    if (s.dispatcher == TokenDispatcher::DeepEp) experts.add("--moe-enable-deepep");
    if (!s.expert_load.dropless()) {
      experts.add("--moe-expert-capacity-factor", fmt::format("{}", s.expert_load.capacity_factor));
      experts.add("--moe-pad-expert-input-to-capacity");
    }
  }

  parallel.add("--tensor-model-parallel-size", num(s.tp));
  parallel.add("--pipeline-model-parallel-size", num(s.pp));
  if (s.cp > 1) {
    parallel.add("--context-parallel-size", num(s.cp));
    parallel.add("--cp-comm-type", std::string(to_string(s.cp_exchange)));
  }
  const std::vector<int> stages = s.stage_layers();
  if (s.interleave > 1 && uneven_chunks(s)) {
    parallel.add("--pipeline-model-parallel-layout", "\"" + pipeline_layout(s) + "\"");
  } else if (s.interleave > 1) {
    parallel.add("--num-layers-per-virtual-pipeline-stage", num(s.chunk_layers.front()));
  } else if (s.pp > 1 && (stages.front() != stages[1] || stages.back() != stages[1])) {
    parallel.add("--decoder-first-pipeline-num-layers", num(stages.front()));
    parallel.add("--decoder-last-pipeline-num-layers", num(stages.back()));
  }
  if (m.moe) {
    parallel.add("--expert-model-parallel-size", num(s.ep));
    parallel.add("--expert-tensor-parallel-size", num(s.etp));
    if (s.ep_comm_overlap) parallel.add("--overlap-moe-expert-parallel-comm");
  }
  if (s.sequence_parallel && s.tp > 1) parallel.add("--sequence-parallel");
  if (s.tp_comm_overlap) parallel.add("--tp-comm-overlap");
  if (s.device_order == DeviceOrder::DataParallelOutermost) parallel.add("--use-tp-pp-dp-mapping");
  if (s.zero_stage == 1) {
    parallel.add("--use-distributed-optimizer");
  } else if (s.zero_stage >= 2) {
    parallel.add("--use-megatron-fsdp");
    parallel.add("--data-parallel-sharding-strategy",
                 s.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
    parallel.add("--ckpt-format", "fsdp_dtensor");
  }
  if (s.overlap_grad_reduce && s.dp > 1) {
    parallel.add("--overlap-grad-reduce");
    if (s.zero_stage >= 1) parallel.add("--overlap-param-gather");
  }

  batch.add("--micro-batch-size", num(s.micro_batch_size));
  batch.add("--global-batch-size", num(s.global_batch));

  if (s.recompute == Recompute::Full) {
    recompute.add("--recompute-granularity", "full");
    recompute.add("--recompute-method", "uniform");
    recompute.add("--recompute-num-layers", "1");
  } else if (s.recompute == Recompute::Selective) {
    recompute.add("--recompute-granularity", "selective");
    if (!s.recompute_modules.is_default()) {
      std::string modules = to_string(s.recompute_modules);
      std::replace(modules.begin(), modules.end(), ',', ' ');
      recompute.add("--recompute-modules", modules);
    }
  }

  if (s.dtype == "bf16" || s.dtype == "fp8") precision.add("--bf16");
  if (s.dtype == "fp16") precision.add("--fp16");
  if (s.dtype == "fp8") precision.add("--fp8-format", "hybrid");
  if (s.dtype == "fp8" && recomputes_norm_or_expert_activation(s))
    precision.add("--fp8-recipe", "tensorwise");
  if (s.fp8_param_gather) precision.add("--fp8-param-gather");
  if (s.grad_reduce_in_bf16) precision.add("--grad-reduce-in-bf16");

  data.add("--data-path", "\"${DATA_PATH}\"");
  if (!m.hf_architecture.empty()) {
    data.add("--tokenizer-type", "HuggingFaceTokenizer");
    data.add("--tokenizer-model", "\"${TOKENIZER_MODEL}\"");
  } else {
    data.add("--tokenizer-type", "GPT2BPETokenizer");
    data.add("--vocab-file", "\"${VOCAB_FILE}\"");
    data.add("--merge-file", "\"${MERGE_FILE}\"");
  }
  data.add("--optimizer", s.optimizer == "adam" ? "adam" : "sgd");
  data.add("--train-iters", "\"${TRAIN_ITERS:-1000}\"");
  data.add("--lr", "\"${LR:-3.0e-4}\"");

  LaunchFile f;
  f.text = fmt::format(
      "#!/usr/bin/env bash\n"
      "# Megatron-LM launch of Unity's plan for {} on {} ({} GPUs, ranks {}):\n"
      "#   {}\n"
      "#   predicted {:.1f} ms per iteration ({})\n"
      "# Flag names from Megatron-LM core_v0.15.0. Set DATA_PATH and the tokenizer's files ({}),\n"
      "# then run this from Megatron-LM's folder on every node.\n"
      "set -euo pipefail\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n",
      s.model_name, s.machine, s.devices, order_name(s.device_order), s.describe(), s.iteration_ms,
      s.origin, m.hf_architecture.empty() ? "VOCAB_FILE, MERGE_FILE" : "TOKENIZER_MODEL");
  if (s.model.vocab % (detail::vocab_divisor(m.vocab, s.tp) * s.tp) != 0)
    f.notes.push_back(
        fmt::format("Megatron-LM pads the vocabulary to a multiple of TP {}: {} rows become more",
                    s.tp, m.vocab));
  if (m.moe && s.ep > 1 && s.tp > 1 && !s.sequence_parallel)
    f.notes.push_back(
        "Megatron-Core warns that expert and tensor parallelism together need sequence "
        "parallelism (--sequence-parallel), which the plan did not use");
  if (s.dtype == "fp8" && recomputes_norm_or_expert_activation(s))
    f.notes.push_back(
        "Megatron-Core's default fp8 recipe (delayed scaling) refuses recomputing layernorm and "
        "moe_act: the launch takes current scaling (--fp8-recipe tensorwise, Transformer Engine "
        "2.6 or later), per-tensor scales as the plan costs them");
  if (m.moe && !runs_grouped_gemm(s))
    f.notes.push_back(fmt::format(
        "Megatron-LM's grouped GEMM for the experts (--moe-grouped-gemm) is bf16's only: the "
        "plan's {} experts run as one GEMM each",
        s.dtype));
  const std::pair<const char*, const ArgList*> arrays[] = {
      {"MODEL_ARGS", &model},  {"MOE_ARGS", &experts},         {"PARALLEL_ARGS", &parallel},
      {"BATCH_ARGS", &batch},  {"RECOMPUTE_ARGS", &recompute}, {"PRECISION_ARGS", &precision},
      {"TRAINING_ARGS", &data}};
  std::vector<std::string> used;
  for (const auto& [name, args] : arrays) {
    if (args->lines.empty() && args == &experts) continue;
    f.text += fmt::format("\n{}=(\n", name);
    for (const auto& line : args->lines) f.text += "  " + line + "\n";
    f.text += ")\n";
    f.names.insert(f.names.end(), args->names.begin(), args->names.end());
    used.push_back(name);
  }
  f.text += "\n" + detail::torchrun_lines(s, "pretrain_gpt.py", used);
  return f;
}

}  // namespace unity::launch
