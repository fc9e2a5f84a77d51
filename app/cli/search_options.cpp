#include "search_options.h"

#include <cctype>
#include <map>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "unity/use_cases/run_model.h"

#include "unity/core/errors.h"
#include "unity/core/launch/launch_limits.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/expert_routing.h"
#include "unity/core/pcg/training_loss.h"

namespace unity::cli {
namespace {

constexpr double kDefaultTimeLimitSeconds = 40;

// A size flag's value: a positive whole number, said plainly (CLI::PositiveNumber prints the
// largest double as the range's end).
const CLI::Validator kPositiveSize(
    [](std::string& value) -> std::string {
      try {
        std::size_t used = 0;
        if (std::stoll(value, &used) > 0 && used == value.size()) return "";
      } catch (const std::exception&) {
      }
      return "must be a positive whole number, got " + value;
    },
    "POSITIVE");

}  // namespace

void add_search_options(CLI::App* cmd, OptimizeOptions& o) {
  cmd->add_option("--alpha", o.alpha, "Prune candidates worse than alpha x the best")
      ->check(CLI::Range(1.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--budget", o.budget, "Candidates costed per search phase")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // A default bound, so that a model whose graph defeats the mapping DP (DenseNet) still gets a
  // plan in reasonable time; 0 searches until the budget is spent.
  o.time_limit_seconds = kDefaultTimeLimitSeconds;
  cmd->add_option("--time-limit", o.time_limit_seconds,
                  "Stop searching after about this many seconds with the best plan so far (0: no "
                  "limit; the budget still applies)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--rules", o.rule_files, "Rule files to search with (default: built-in)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--pin", o.pins,
                  "Apply this rule (RULE or RULE@NODE) wherever it matches, in every plan");
  cmd->add_option("--veto", o.vetoes,
                  "Never apply this rule (RULE, RULE@NODE or a pattern such as 'mlp_*')");
  cmd->add_flag("!--no-split", o.split, "Search the whole graph at once (no graph splitting)");
  cmd->add_flag("!--no-pipeline", o.pipelines,
                "Offer no pipeline layouts (the paper's search without pipeline parallelism)");
  cmd->add_option("--min-piece", o.min_piece, "Smallest piece graph splitting cuts off (operators)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--beam", o.beam, "Partitionings of each cut's tensor carried to the next piece")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "Optimizer whose state the memory model counts")
      ->check(CLI::IsMember({"sgd", "sgd-momentum", "adam"}))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--flop-count", [&o](const std::string& v) { o.flop_count = flop_count_from_string(v); },
         "How TFLOP/s count a causal attention, to compare with a framework's figure: full "
         "(Megatron-LM before Megatron-Core 0.12, torchtitan, PaLM) or causal (the unmasked "
         "half: Megatron-Core 0.12 on); the predicted time is the same")
      ->check(CLI::IsMember({"full", "causal"}))
      ->default_str("full");
}

void add_model_options(CLI::App* cmd, ModelOptions& m) {
  cmd->add_option("--batch", m.batch,
                  "Global batch of a zoo model (default: the zoo's per-device batch x devices)")
      ->check(CLI::PositiveNumber);
  add_resize_options(cmd, m.resize);
  cmd->add_option("--scale", m.scale,
                  "Shrink a zoo model's widths, tables and depth by this factor (0, 1], as "
                  "`unity run --scale` does")
      ->check(CLI::Range(1e-9, 1.0))
      ->group("Model size");
  cmd->add_option("--dtype", m.dtype,
                  "Compute dtype of the model: float32, float16, bfloat16, or fp8 (GEMMs in fp8 "
                  "with per-tensor scaling, the rest bf16, as Transformer Engine trains; default: "
                  "the model's own). The frameworks' short names (fp32, fp16, bf16) are taken too")
      // Megatron-LM's --bf16/--fp16 and torchtitan's "bfloat16" name the same types two ways;
      // an engineer types either.
      ->transform(CLI::Validator(
          [](std::string& name) -> std::string {
            static const std::map<std::string, std::string> kNames = {
                {"float32", "float32"}, {"fp32", "float32"},      {"float16", "float16"},
                {"fp16", "float16"},    {"bfloat16", "bfloat16"}, {"bf16", "bfloat16"},
                {"fp8", "fp8"}};
            std::string lower = name;
            for (char& c : lower)
              c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            const auto it = kNames.find(lower);
            if (it == kNames.end())
              return fmt::format(
                  "'{}' is not a dtype Unity trains in: float32 (fp32), float16 "
                  "(fp16), bfloat16 (bf16) or fp8",
                  name);
            name = it->second;
            return {};
          },
          "DTYPE"))
      ->group("Model size");
  auto* groups =
      cmd->add_option("--moe-router-num-groups", m.route_groups,
                      "Node-limited routing: the experts in this many contiguous groups, a token's "
                      "top-k from its best --moe-router-group-topk of them (Megatron-LM's flags; "
                      "DeepSeek-V3's 8 and 4); it bounds the nodes DeepEP sends a token to. "
                      "Default: the model's own (1: no limit)")
          ->check(CLI::PositiveNumber)
          ->group("Pipeline layout (large models)");
  cmd->add_option("--moe-router-group-topk", m.route_group_top_k,
                  "The groups of --moe-router-num-groups a token's experts come from")
      ->check(CLI::PositiveNumber)
      ->needs(groups)
      ->group("Pipeline layout (large models)");
  groups->needs("--moe-router-group-topk");
  add_loss_option(cmd, m.loss);
}

void add_loss_option(CLI::App* cmd, std::string& loss) {
  cmd->add_option("--loss", loss,
                  "The loss a model without one (an inference export) trains with (default: "
                  "cross-entropy for a 2-D output, mse otherwise)")
      ->check(CLI::IsMember({"cross-entropy", "mse"}));
}

void attach_training_loss(Graph& g, const std::string& loss, const std::string& spec) {
  std::optional<LossKind> kind;
  if (!loss.empty()) kind = loss_kind_from_string(loss);
  if (const auto attached = attach_loss(g, kind))
    fmt::print(stderr, "note: {}\n", describe(*attached, spec));
}

void add_resize_options(CLI::App* cmd, zoo::TransformerResize& r) {
  for (auto [value, flag, what] :
       {std::tuple{&r.layers, "--layers", "Transformer layers"},
        {&r.hidden, "--hidden", "Hidden size (the feed-forward width follows it)"},
        {&r.heads, "--heads", "Attention heads"},
        {&r.seq, "--seq", "Sequence length"},
        {&r.vocab, "--vocab", "Vocabulary size"},
        {&r.ffn, "--ffn", "Feed-forward width (instead of the one that follows --hidden)"},
        {&r.kv_heads, "--kv-heads", "Key/value heads (grouped-query attention)"},
        {&r.head_dim, "--head-dim",
         "Attention head size (instead of hidden / heads; q and the context are heads x this "
         "wide)"}})
    cmd->add_option(flag, *value,
                    std::string(what) + " of a gpt or llama family model" +
                        (value == &r.seq || value == &r.layers
                             ? " or a Hugging Face config (default: the config's)"
                             : ""))
        ->check(kPositiveSize)
        ->group("Model size");
  cmd->add_flag("--tie-embeddings", r.tie_embeddings,
                "The head reads the token embedding's table (Megatron-LM's default, Hugging "
                "Face's tie_word_embeddings) in a gpt or llama family model")
      ->group("Model size");
}

Graph ModelOptions::load(const std::string& spec, int devices, bool training) const {
  use_cases::RunModel request;
  request.target = spec;
  request.devices = devices;
  request.batch = batch;
  request.scale = scale;
  request.resize = resize;
  request.loss = loss;
  request.attach_loss = training || !loss.empty();
  std::string note;
  Graph g = use_cases::build_run_model(request, &note);
  if (!note.empty()) fmt::print(stderr, "note: {}\n", note);
  if (!dtype.empty()) apply_dtype_name(g, dtype);
  if (route_groups > 0) set_route_groups(g, route_groups, route_group_top_k);
  return g;
}

void add_layout_options(CLI::App* cmd, LayoutOptions& l) {
  const char* group = "Pipeline layout (large models)";
  cmd->add_option("--tp", l.tp, "Tensor-parallel devices per stage replica (inside a node)")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_option("--pp", l.pp, "Pipeline stages")->check(CLI::PositiveNumber)->group(group);
  cmd->add_option("--ep", l.ep,
                  "Expert-parallel devices: a mixture-of-experts layer's experts spread over "
                  "this many devices of a stage (a multiple of --tp dividing tp x dp; with --etp "
                  "= --tp, a number of data-parallel copies; 1: none)")
      ->check(CLI::PositiveNumber)
      ->group(group);
  // Megatron-Core's --expert-tensor-parallel-size (its default: TP); Unity plans 1 and TP, the
  // degrees torchtitan also runs (layout_space.cpp says why).
  cmd->add_option("--etp", l.etp,
                  "Expert tensor parallelism: devices each expert's FFN is split over, 1 (every "
                  "expert whole on its device) or --tp (each expert split as a dense MLP is, "
                  "Megatron-Core's default); searched where not given")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_option("--dispatcher", l.dispatcher,
                  "How tokens reach their experts: alltoall (a copy per picked expert, "
                  "Megatron-Core's all-to-all dispatcher) or deepep (once per node, then over "
                  "NVLink); searched by the joint search")
      ->check(CLI::IsMember({"alltoall", "deepep"}))
      ->group(group);
  cmd->add_option("--moe-expert-capacity-factor", l.capacity_factor,
                  "Each expert takes at most this many times its even share of tokens, padded up "
                  "to it, the rest dropped (Megatron-Core's flag with "
                  "--moe-pad-expert-input-to-capacity); default: dropless")
      ->check(CLI::Range(0.01, 64.0))
      ->group(group);
  cmd->add_option("--moe-load-imbalance", l.imbalance,
                  "Dropless routing: the busiest expert-parallel device's tokens over an even "
                  "share, which sets the layer's time (1: balanced)")
      ->check(CLI::Range(1.0, 64.0))
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--grad-reduce-in-bf16", l.grad_reduce_in_bf16,
                "Keep and reduce the gradients in bf16, 2 bytes an element instead of fp32's 4 "
                "(Megatron-LM's flag; a bf16 or fp8 model)")
      ->group(group);
  cmd->add_flag("--fp8-param-gather", l.fp8_param_gather,
                "Hold the weights of fp8 GEMMs in fp8 (and gather them so), not in bf16 beside an "
                "fp8 copy (Megatron-LM's flag; --dtype fp8)")
      ->group(group);
  cmd->add_flag("--overlap-moe-expert-parallel-comm", l.ep_comm_overlap,
                "Run each micro-batch's expert all-to-alls behind another micro-batch's compute "
                "(Megatron-Core's batch-level overlap; the joint search chooses it)")
      ->group(group);
  cmd->add_option("--cp", l.cp,
                  "Context-parallel devices: each sequence split over this many devices, the "
                  "attention's keys and values exchanged among them (1: none; searched by the "
                  "joint search)")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_option("--cp-comm", l.cp_comm,
                  "How context-parallel devices share keys and values: p2p (a ring of sends "
                  "hidden behind the attention, Megatron-Core's default) or all_gather (gathered "
                  "before it, as Llama 3 did); searched by the joint search")
      ->check(CLI::IsMember({"p2p", "all_gather"}))
      ->group(group);
  cmd->add_option("--micro-batches", l.micro_batches, "Micro-batches per iteration")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_option("--interleave", l.interleave, "Model chunks per device (interleaved 1F1B)")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd->add_flag("--account-for-embedding-in-pipeline-split", l.embedding_in_split,
                "Expert mode and --launchable: count the embedding as one more layer in the first "
                "chunk when "
                "dealing layers to the stages (Megatron-LM's flag)")
      ->group(group);
  cmd->add_flag("--account-for-loss-in-pipeline-split", l.loss_in_split,
                "Expert mode and --launchable: count the loss as one more layer in the last chunk "
                "(Megatron-LM's flag)")
      ->group(group);
  cmd->add_flag("--launchable", l.launchable,
                "Joint mode: plan only what a framework's launcher takes (unity export): each "
                "layer split as Megatron-LM splits it, stages cut between whole layers; the "
                "layout still searched")
      ->group(group);
  cmd->add_option("--launcher", l.launcher,
                  "Joint mode: plan only what this framework's launcher runs (--launchable, and "
                  "for deepspeed no interleaving, TP overlap or context parallelism, ZeRO-1 at "
                  "most with stages)")
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed"}))
      ->group(group);
  cmd->add_option("--recompute", l.recompute, "Activation recomputation")
      ->check(CLI::IsMember({"full", "selective", "none"}))
      ->group(group);
  cmd->add_option("--recompute-modules", l.recompute_modules,
                  "What selective recomputation runs again, Megatron-Core's modules: core_attn "
                  "(the default), layernorm, moe_act, moe (comma-separated; implies --recompute "
                  "selective)")
      ->check(
          [](const std::string& v) {
            // Parsed here too, so that an empty list is refused, not taken as not given.
            try {
              recompute_modules_from_string(v);
              return std::string();
            } catch (const InputError& e) {
              return std::string(e.what());
            }
          },
          "MODULES")
      ->group(group);
  cmd->add_option("--zero", l.zero, "ZeRO stage (1: optimizer state, 2: + gradients, 3: + weights)")
      ->check(CLI::Range(0, 3))
      ->group(group);
  cmd->add_flag("--sequence-parallel", l.sequence_parallel,
                "Split what tensor parallelism leaves whole along the sequence")
      ->group(group);
  cmd->add_flag("--overlap-grad-reduce", l.overlap_grad_reduce,
                "Reduce data-parallel gradients behind the backward pass and gather ZeRO's "
                "weights behind the forward (Megatron-Core's --overlap-grad-reduce "
                "--overlap-param-gather; the joint search overlaps by itself)")
      ->group(group);
  cmd->add_flag("--tp-comm-overlap", l.tp_comm_overlap,
                "Pipeline tensor-parallel collectives with their GEMMs (Megatron-Core's "
                "--tp-comm-overlap; needs --sequence-parallel; the joint search chooses it)")
      ->group(group);
  cmd->add_option("--device-order", l.device_order,
                  "Device order, inner to outer: tp-dp-pp (the pipeline outermost, Megatron-LM's) "
                  "or tp-pp-dp (the data-parallel copies outermost, Llama 3's); searched on "
                  "machines with pods")
      ->check(CLI::IsMember({"tp-dp-pp", "tp-pp-dp"}))
      ->group(group);
}

LayoutRequest LayoutOptions::layout() const {
  LayoutRequest r;
  r.tensor_parallel = tp;
  r.pipeline_stages = pp;
  r.micro_batches = micro_batches;
  r.interleave = interleave;
  r.expert_parallel = ep;
  r.expert_tensor_parallel = etp;
  if (!dispatcher.empty()) r.dispatcher = token_dispatcher_from_string(dispatcher);
  if (ep_comm_overlap) r.ep_comm_overlap = true;
  r.expert_load.capacity_factor = capacity_factor;
  r.expert_load.imbalance = imbalance;
  r.grad_reduce_in_bf16 = grad_reduce_in_bf16;
  r.fp8_param_gather = fp8_param_gather;
  r.context_parallel = cp;
  if (!cp_comm.empty()) r.context_exchange = context_exchange_from_string(cp_comm);
  r.set_recompute(recompute, recompute_modules);
  r.zero_stage = zero;
  if (sequence_parallel) r.sequence_parallel = true;
  if (overlap_grad_reduce) r.overlap_grad_reduce = true;
  if (tp_comm_overlap) r.tp_comm_overlap = true;
  if (!device_order.empty()) r.device_order = device_order_from_string(device_order);
  r.embedding_in_split = embedding_in_split;
  r.loss_in_split = loss_in_split;
  r.launchable = launchable;
  if (!launcher.empty()) launch::limit_to_launcher(r, launch::framework_from_string(launcher));
  return r;
}

}  // namespace unity::cli
