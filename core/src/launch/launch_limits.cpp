#include "unity/core/launch/launch_limits.h"

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/plan/model_shape.h"

namespace unity::launch {

namespace {

[[noreturn]] void refuse(Framework f, std::string_view flag, std::string_view lack) {
  throw InputError(fmt::format("--launcher {}: {} asks for {}, which {} has not", to_string(f),
                               flag, lack, display_name(f)));
}

}  // namespace

void limit_to_launcher(LayoutRequest& r, Framework f) {
  r.launchable = true;
  r.launcher = std::string(to_string(f));
  if (f == Framework::Megatron) return;
  if (r.recompute == Recompute::Selective && !r.recompute_modules.is_default())
    refuse(f, "--recompute-modules", "Megatron-Core's recomputation modules");
  r.recompute_module_sets = false;
  r.sequence_splits_over_tp_and_two_cp = f == Framework::Torchtitan;
  if (f != Framework::DeepSpeed) return;
  if (r.interleave > 1) refuse(f, "--interleave", "an interleaved schedule");
  r.interleave = 1;
  if (r.tp_comm_overlap.value_or(false))
    refuse(f, "--tp-comm-overlap", "tensor-parallel communication overlap");
  r.tp_comm_overlap = false;
  if (r.context_parallel > 1) refuse(f, "--cp", "context parallelism");
  r.context_parallel = 1;
  r.max_zero_with_stages = 1;
  r.stages_of_equal_layers = true;
  // Its MoE layer (deepspeed/moe): experts over the data-parallel copies (ep_size), its own
  // all-to-all, and no ZeRO-3 (which does not take MoE layers).
  r.experts_over_copies_only = true;
  r.max_zero_with_experts = 2;
}

void limit_to_model(LayoutRequest& r, const Graph& model) {
  if (r.launcher.empty()) return;
  const Framework framework = framework_from_string(r.launcher);
  if (framework == Framework::Megatron) return;
  const auto shape = model_shape_of(model);
  if (!shape) return;
  if (framework == Framework::DeepSpeed) {
    // A dense model Megatron-DeepSpeed's GPT does not build trains on DeepSpeed's data-parallel
    // path (the Hugging Face model under ZeRO): TP 1 and PP 1.
    const auto lacks = detail::megatron_deepspeed_lacks(*shape);
    if (shape->moe || lacks.empty()) return;
    for (const auto& [flag, degree] :
         {std::pair{"--tp", r.tensor_parallel}, std::pair{"--pp", r.pipeline_stages}})
      if (degree > 1)
        throw InputError(fmt::format(
            "--launcher deepspeed: {} {} asks for Megatron-DeepSpeed's model-parallel GPT, "
            "which cannot build this model ({}); DeepSpeed trains it data-parallel only",
            flag, degree, lacks.front()));
    r.tensor_parallel = 1;
    r.pipeline_stages = 1;
    return;
  }
  const auto flavor = detail::torchtitan_moe_flavor(*shape);
  if (!flavor) return;
  const auto lacks = [&](std::string_view flag, std::string_view what) {
    throw InputError(
        fmt::format("--launcher torchtitan: {} asks for {}, which torchtitan's {} has not", flag,
                    what, flavor->flavor));
  };
  if (!flavor->pipelines) {
    if (r.pipeline_stages > 1 || r.interleave > 1)
      lacks(r.pipeline_stages > 1 ? "--pp" : "--interleave", "pipeline parallelism");
    r.pipeline_stages = 1;
  }
  if (!flavor->fp8_tensor_parallel && has_fp8_gemms(model)) {
    if (r.tensor_parallel > 1) lacks("--tp", "tensor parallelism with float8 GEMMs (--dtype fp8)");
    r.tensor_parallel = 1;
  }
  if (!flavor->sdpa) {
    if (r.context_parallel > 1)
      lacks("--cp", "context parallelism (its attention is FlexAttention)");
    r.context_parallel = 1;
  }
}

}  // namespace unity::launch
