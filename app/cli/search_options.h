#pragma once
// The search flags `optimize` and `compare` share: alpha, budget, rule files, pins and vetoes,
// graph splitting and the optimizer whose state the memory model counts.
#include <CLI/CLI.hpp>

#include "unity/core/plan/plan_optimizer.h"

namespace unity::cli {

// `o` must outlive the parse.
void add_search_options(CLI::App* cmd, OptimizeOptions& o);
// How a command loads its MODEL: --batch (the global batch of a zoo model; 0: the per-device
// batch x devices), --layers --hidden --heads --seq --vocab (resize a gpt or llama family member)
// and --dtype (the compute dtype: float32, float16, bfloat16).
// --loss cross-entropy|mse: the loss an inference export (a model without one) is trained with.
struct ModelOptions {
  std::int64_t batch = 0;
  zoo::TransformerResize resize;
  std::string dtype;
  std::string loss;
  double scale = 1.0;  // --scale: a zoo model shrunk (widths, tables, depth)
  // --moe-router-num-groups, --moe-router-group-topk (0: the model's own routing).
  std::int64_t route_groups = 0, route_group_top_k = 0;
  // `training`: a model without a loss gets one (--loss, else the default for its output), and
  // stderr says which.
  Graph load(const std::string& spec, int devices, bool training = true) const;
};
// --loss alone (for commands with their own model loading).
void add_loss_option(CLI::App* cmd, std::string& loss);
// Attaches the loss a model without one trains with (training_loss.h), saying so on stderr.
void attach_training_loss(Graph& g, const std::string& loss, const std::string& spec);
void add_model_options(CLI::App* cmd, ModelOptions& m);
// --layers --hidden --heads --seq --vocab alone (add_model_options includes them; `unity run` has a
// --batch of its own).
void add_resize_options(CLI::App* cmd, zoo::TransformerResize& r);

// --tp --pp --micro-batches --interleave --recompute --zero --sequence-parallel: a large model's
// pipeline layout, fixed where given (`layout()` after the parse).
struct LayoutOptions {
  int tp = 0, pp = 0, micro_batches = 0, interleave = 0, zero = -1, ep = 0, cp = 0;
  int etp = 0;  // --etp: 1 or --tp (0: searched in joint mode, 1 in expert mode)
  std::string recompute;
  std::string recompute_modules;
  bool sequence_parallel = false;
  bool overlap_grad_reduce = false;
  bool tp_comm_overlap = false;
  bool embedding_in_split = false;  // --account-for-embedding-in-pipeline-split
  bool loss_in_split = false;       // --account-for-loss-in-pipeline-split
  bool launchable = false;          // --launchable
  std::string launcher;             // --launcher megatron|torchtitan|deepspeed
  std::string device_order;
  std::string dispatcher;
  bool ep_comm_overlap = false;
  std::string cp_comm;
  double capacity_factor = 0;  // --moe-expert-capacity-factor (0: dropless)
  double imbalance = 1;        // --moe-load-imbalance
  bool grad_reduce_in_bf16 = false;
  bool fp8_param_gather = false;
  LayoutRequest layout() const;
};
void add_layout_options(CLI::App* cmd, LayoutOptions& l);

}  // namespace unity::cli
