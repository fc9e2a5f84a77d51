#pragma once
// One framework's launcher as limits on the layout search (`unity optimize --launcher F`, which
// implies --launchable): the features of a layout it cannot run, left out of the search, so
// that the plan exports to it as it is.
#include "unity/core/launch/launch_writers.h"
#include "unity/core/pipeline/training_setup.h"

namespace unity::launch {

// DeepSpeed: no interleaved schedule, no tensor-parallel communication overlap, no context
// parallelism, ZeRO-1 at most with pipeline stages, stages of as many layers each (PP divides
// the layers), and where the model has experts TP 1, its own
// all-to-all without overlap and ZeRO-2 at most; DeepSpeed and torchtitan: none of
// Megatron-Core's recomputation modules beyond the attention's. Megatron-LM: none beyond
// --launchable's. Throws InputError naming the flag where `request` fixes what the framework
// cannot run.
void limit_to_launcher(LayoutRequest& request, Framework framework);

// What the launcher `request` is limited to (its `launcher`) lacks for `model` in particular:
// torchtitan's flavor of a mixture-of-experts model may not pipeline (qwen3, gpt_oss), take
// context parallelism (its FlexAttention flavors) or split float8 GEMMs by TP (deepseek_v3); a
// dense model Megatron-DeepSpeed's GPT cannot build (a rope scaling, a window) trains on
// DeepSpeed's data-parallel path only (TP 1, PP 1). Left
// out of the search like the rest; a flag that fixes it is refused by name (InputError). Nothing
// where no launcher is named or no flavor matches (the framework then refuses the model whole, with
// its reason).
void limit_to_model(LayoutRequest& request, const Graph& model);

}  // namespace unity::launch
