#pragma once
// The knobs of a large-model training layout beyond the PCG's own parallel operators (Megatron-LM,
// Narayanan et al. SC'21; ZeRO, Rajbhandari et al. SC'20; sequence parallelism, Korthikanti et al.
// 2022): pipeline stages and micro-batches, interleaved model chunks, activation recomputation,
// optimizer-state sharding and sequence parallelism. Unset fields of a LayoutRequest are searched.
#include <optional>
#include <string>
#include <string_view>

#include "unity/core/pipeline/context_exchange.h"
#include "unity/core/pipeline/device_order.h"
#include "unity/core/pipeline/expert_load.h"
#include "unity/core/pipeline/recompute_modules.h"
#include "unity/core/pipeline/token_dispatch.h"

namespace unity {

enum class Recompute {
  None,       // every activation the backward pass needs is kept
  Selective,  // the attention internals (scores, probabilities) are recomputed
  Full,       // only each block's input is kept; the block's forward runs again in the backward
};
std::string_view to_string(Recompute r);
Recompute recompute_from_string(std::string_view name);  // throws InputError
// "none", "full", "selective", or "selective (layernorm,moe_act)" where the modules are not the
// default: for plan texts.
std::string describe_recompute(Recompute level, RecomputeModules modules);

struct LayoutRequest {
  int tensor_parallel = 0;  // --tp: devices of one stage replica (0: searched)
  int pipeline_stages = 0;  // --pp (0: searched)
  int micro_batches = 0;    // --micro-batches per iteration and pipeline (0: searched)
  int interleave = 0;       // --interleave: model chunks per device (0: searched; 1: plain 1F1B)
  std::optional<Recompute> recompute;  // --recompute
  // --recompute-modules: what selective recomputation runs again (Megatron-Core's modules; the
  // attention's scores unless given). Naming them asks for selective recomputation.
  RecomputeModules recompute_modules;
  int zero_stage = -1;                    // --zero 0..3 (-1: searched)
  std::optional<bool> sequence_parallel;  // --sequence-parallel
  // --overlap-grad-reduce: the data-parallel reduce behind the backward pass, ZeRO's gather behind
  // the forward (unset: the joint search overlaps, Megatron-LM's SC'21 layouts do not)
  std::optional<bool> overlap_grad_reduce;
  // --tp-comm-overlap: tensor-parallel collectives pipelined with the GEMMs next to them
  // (Transformer Engine's userbuffers; needs sequence parallelism). Unset: searched in joint mode.
  std::optional<bool> tp_comm_overlap;
  // --device-order: which of the pipeline and the data-parallel copies is outermost
  // (device_order.h). Unset: searched where the machine has pods, else the pipeline outermost.
  std::optional<DeviceOrder> device_order;
  // --ep: devices the experts of a mixture-of-experts layer are spread over (Megatron-Core's
  // expert model parallelism, folded into tp x dp; 0: searched where the model has experts, 1:
  // none beyond the replica's own split).
  int expert_parallel = 0;
  // --etp: each expert's FFN split over this many devices (Megatron-Core's expert tensor
  // parallelism): 1, or the layout's tp (the experts split as a dense MLP is, Megatron-Core's
  // default); 0: searched (1 and tp) in joint mode, 1 in expert mode.
  int expert_tensor_parallel = 0;
  // --dispatcher: how tokens reach their experts (token_dispatch.h); unset: searched in joint
  // mode, Megatron-Core's all-to-all dispatcher in expert mode.
  std::optional<TokenDispatcher> dispatcher;
  // --overlap-moe-expert-parallel-comm: each micro-batch's all-to-alls run behind another
  // micro-batch's compute in the 1F1B steady state (Megatron-Core's batch-level overlap).
  // Unset: searched in joint mode, off in expert mode.
  std::optional<bool> ep_comm_overlap;
  // --moe-expert-capacity-factor, --moe-load-imbalance: the busiest device's tokens against an
  // even share (expert_load.h); balanced and dropless unless given. Stated, not searched.
  ExpertLoad expert_load;
  // --grad-reduce-in-bf16 (Megatron-LM's): gradients accumulated and reduced in bf16, 2 bytes an
  // element instead of fp32's 4 (gradient_bytes). A bf16 or fp8 model only.
  bool grad_reduce_in_bf16 = false;
  // --fp8-param-gather (Megatron-LM's, Transformer Engine's fp8 weights): the weights fp8 GEMMs
  // read are held in fp8 (with their transposed copy), not in bf16 beside an fp8 copy: 2 bytes
  // an element instead of 4, and gathered in fp8. An fp8 model only.
  bool fp8_param_gather = false;
  // --cp: devices each sequence is split over (context parallelism, context_exchange.h; 0:
  // searched in joint mode where the model has attention, 1 in expert mode).
  int context_parallel = 0;
  // --cp-comm: how those devices share keys and values; unset: searched in joint mode,
  // Megatron-Core's ring (p2p) in expert mode.
  std::optional<ContextExchange> context_exchange;
  // --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split (Megatron's):
  // in expert mode, the stages' layer counts take the embedding and the loss each as one more
  // layer, at the first and the last chunk (NVIDIA's Qwen3-235B-A22B: 94 layers + 2 on 32 stages
  // of 3 chunks). The joint search balances chunks by time, which these do not change.
  bool embedding_in_split = false;
  bool loss_in_split = false;
  // --launchable: the joint search plans only what a framework's launcher takes (unity export):
  // each layer split as Megatron-LM splits it (its tensor parallelism, with the search's
  // algebraic rewrites such as a fused attention), and the stages cut between whole layers as
  // Megatron-LM deals them; the layout (TP, CP, PP, interleaving, micro-batches, ZeRO,
  // recomputation, overlap, experts) still searched.
  bool launchable = false;
  // What one framework's launcher lacks besides (launch_limits.h, `--launcher F`): ZeRO beyond
  // this stage with pipeline stages, and Megatron-Core's recomputation modules beyond the
  // attention's. The others it lacks (interleaving, TP overlap, context parallelism) are fixed
  // off in the fields above.
  int max_zero_with_stages = 3;
  bool recompute_module_sets = true;
  // Where the model has experts (DeepSpeed's MoE layer): the experts spread over data-parallel
  // copies only (TP 1), tokens sent by the framework's own all-to-all with nothing overlapped,
  // and ZeRO up to max_zero_with_experts.
  bool experts_over_copies_only = false;
  int max_zero_with_experts = 3;
  // Pipeline stages of as many layers each (DeepSpeed's pipeline engine): PP divides the layers.
  bool stages_of_equal_layers = false;
  // The sequence splits over TP x 2 x CP even at CP 1 (torchtitan's ParallelDims.seq_len_divisor,
  // which every model's parallelize asserts: its TP always splits the sequence, its CP into
  // 2 x CP chunks): replicas whose sequence does not split are left out.
  bool sequence_splits_over_tp_and_two_cp = false;
  std::string launcher;  // the framework those limits are ("deepspeed"; empty: none)
  bool empty() const {
    return !tensor_parallel && !pipeline_stages && !micro_batches && !interleave && !recompute &&
           zero_stage < 0 && !sequence_parallel && !overlap_grad_reduce && !tp_comm_overlap &&
           !device_order && !expert_parallel && !expert_tensor_parallel && !dispatcher &&
           !ep_comm_overlap && !context_parallel && !context_exchange && !embedding_in_split &&
           !loss_in_split && expert_load.balanced() && !grad_reduce_in_bf16 && !fp8_param_gather &&
           recompute_modules.is_default() && !launchable;
  }
  // The recomputation `--recompute LEVEL --recompute-modules NAMES` ask for (an empty one: not
  // given): named modules ask for selective recomputation and refuse another level (InputError).
  void set_recompute(std::string_view level, std::string_view modules);
  // "--tp 8 --pp 8 --micro-batches 96": what was fixed, for messages.
  std::string describe() const;
};

}  // namespace unity
