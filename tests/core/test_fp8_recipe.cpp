// The FP8 recipe Megatron-LM's Llama 3 script runs (--fp8-param-gather --grad-reduce-in-bf16):
// the weights of fp8 GEMMs held in fp8 with their transposed copy instead of in bf16 beside both,
// and the gradients kept and reduced in bf16 instead of fp32. Bytes by hand on one device.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {
namespace {

PipelineOptions one_stage(bool fp8_param_gather, bool grad_reduce_in_bf16) {
  PipelineOptions o;
  o.request.tensor_parallel = 1;
  o.request.pipeline_stages = 1;
  o.request.micro_batches = 1;
  o.request.recompute = Recompute::None;
  o.request.zero_stage = 0;
  o.request.fp8_param_gather = fp8_param_gather;
  o.request.grad_reduce_in_bf16 = grad_reduce_in_bf16;
  return o;
}

// llama-tiny in fp8 on one H100: every parameter's gradient goes from 4 bytes to 2, and each
// weight an fp8 GEMM reads from 2 + 2 bytes (bf16 and its fp8 copies) to the 2 of its fp8
// copies. Activations, optimizer state and time of compute stay.
TEST(Fp8Recipe, WeightsInFp8AndGradientsInBf16ByHand) {
  Graph g = load_model_for_devices("llama-tiny", 1, 4);
  set_fp8_gemms(g);
  const MachineSpec m = load_machine("dgx-h100", {0, 1});
  const auto base = plan_pipeline(g, m, one_stage(false, false));
  const auto recipe = plan_pipeline(g, m, one_stage(true, true));
  ASSERT_TRUE(base && recipe);
  const MemoryBreakdown& a = base->rank_memory.at(0);
  const MemoryBreakdown& b = recipe->rank_memory.at(0);
  // fp8 GEMMs read 2 layers x (q 64x64, k and v 64x32, o 64x64, gate, up and down 64x176) and
  // the head 64x256: 108,544 weights; with the embedding (256 x 64) and 5 norms of 64, 125,248.
  const double fp8_weights = 2 * (4096 + 2048 + 2048 + 4096 + 3 * 64 * 176) + 64 * 256;
  const double parameters = fp8_weights + 256 * 64 + 5 * 64;
  EXPECT_DOUBLE_EQ(a.gradients, 4 * parameters);
  EXPECT_DOUBLE_EQ(b.gradients, 2 * parameters);
  EXPECT_DOUBLE_EQ(a.weights, 2 * parameters + 2 * fp8_weights);
  EXPECT_DOUBLE_EQ(b.weights, 2 * parameters);
  EXPECT_DOUBLE_EQ(a.optimizer, b.optimizer);
  EXPECT_DOUBLE_EQ(a.activations, b.activations);
  EXPECT_TRUE(recipe->fp8_param_gather);
  EXPECT_TRUE(recipe->grad_reduce_in_bf16);
}

TEST(Fp8Recipe, RefusedWhereTheModelHasNoFp8OrBf16) {
  const MachineSpec m = load_machine("dgx-h100", {0, 1});
  const Graph bf16 = load_model_for_devices("llama-tiny", 1, 4);
  EXPECT_THROW(plan_pipeline(bf16, m, one_stage(true, false)), InputError);
  Graph fp32 = load_model_for_devices("llama-tiny", 1, 4);
  set_compute_dtype(fp32, DataType::Float32);
  EXPECT_THROW(plan_pipeline(fp32, m, one_stage(false, true)), InputError);
}

}  // namespace
}  // namespace unity
