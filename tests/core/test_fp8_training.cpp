// FP8 training (set_fp8_gemms, `--dtype fp8`) as the cost model prices it, by hand: a Linear's
// GEMM at the device's fp8 peak, its casts to fp8 as a kernel of their own, the input it keeps for
// the weight gradient in fp8, its weights' fp8 copies beside the bf16 ones; and a device without an
// fp8 peak running the same operator as in bf16.
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::fp8_training_test {
namespace {

constexpr std::int64_t kTokens = 1024, kIn = 512, kOut = 256;

struct OneLinear {
  Graph g;
  NodeId node = 0;
};

OneLinear linear(bool fp8) {
  OneLinear l;
  GraphBuilder b(l.g);
  TensorRef x = b.input("x", {kTokens, kIn});
  l.node = b.linear(x, kOut, "fc", /*bias=*/false).node;
  if (fp8)
    set_fp8_gemms(l.g);
  else
    set_compute_dtype(l.g, DataType::BFloat16);
  return l;
}

// 1 TFLOP/s in bf16, 2 in fp8 (0 for none), 1 TB/s, no efficiency losses, no launch latency, no
// wave quantization.
MachineSpec device(double fp8_peak) {
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e12);
  d.peak_flops_fp32 = 0.5e12;
  d.peak_flops_fp8 = fp8_peak;
  d.fused_elementwise = true;
  return testing_machines::one_device_machine(d);
}

const double kFlops = 2.0 * kTokens * kIn * kOut;                           // 268,435,456
const double kBytes = (kTokens * kIn + kIn * kOut + kTokens * kOut) * 2.0;  // bf16 in, w, out

}  // namespace

TEST(Fp8Training, TheDtypeNameMarksEveryGemmAndKeepsTheTensorsBf16) {
  OneLinear l = linear(false);
  apply_dtype_name(l.g, "fp8");
  EXPECT_TRUE(has_fp8_gemms(l.g.node(l.node)));
  EXPECT_EQ(l.g.shape(l.g.node(l.node).output()).dtype, DataType::BFloat16);
  EXPECT_EQ(compute_dtype(l.g), DataType::BFloat16);
  OneLinear plain = linear(false);
  EXPECT_FALSE(has_fp8_gemms(plain.g));
}

TEST(Fp8Training, AGemmAtTheFp8PeakWithItsCastsBesideIt) {
  const OneLinear bf16 = linear(false), fp8 = linear(true);
  const TaskWork w = task_work(fp8.g, fp8.node);
  EXPECT_DOUBLE_EQ(w.flops, kFlops);
  EXPECT_DOUBLE_EQ(w.fp8_flops, kFlops);
  // The input read in bf16 and written in fp8 twice (as is and transposed): 4 bytes an element.
  EXPECT_DOUBLE_EQ(w.fp8_cast_bytes, 4.0 * kTokens * kIn);

  const MachineSpec h = device(2e12);
  const CostModel model(h);
  const DeviceSpec& d = h.device(0);
  // bf16: max(268 MFLOP / 1 TFLOP/s, 1.31 MB / 1 TB/s) = 268.4 us.
  const OpTimes b = model.task_times(bf16.g, bf16.node, d);
  EXPECT_NEAR(b.forward, std::max(kFlops / 1e12, kBytes / 1e12), 1e-15);
  // fp8: 134.2 us of GEMM, then 2.1 us of casts.
  const OpTimes f = model.task_times(fp8.g, fp8.node, d);
  EXPECT_NEAR(f.forward, std::max(kFlops / 2e12, kBytes / 1e12) + 4.0 * kTokens * kIn / 1e12,
              1e-15);
  EXPECT_NEAR(f.backward, 2 * f.forward, 1e-15);

  // A device without fp8 tensor cores runs the operator as in bf16.
  const MachineSpec a = device(0);
  const OpTimes fallback = CostModel(a).task_times(fp8.g, fp8.node, a.device(0));
  EXPECT_DOUBLE_EQ(fallback.forward, b.forward);
}

// An fp8 GEMM runs at the device's fp8 rate where the preset gives one (Hopper's fp8 reaches less
// of its peak than its bf16 does), and the bf16 GEMMs keep theirs.
TEST(Fp8Training, AnFp8GemmAtTheDevicesOwnFp8Rate) {
  MachineSpec h = device(2e12);
  h.device_types[0].fp8_compute_efficiency = 0.5;
  const CostModel model(h);
  const DeviceSpec& d = h.device(0);
  const OneLinear bf16 = linear(false), fp8 = linear(true);
  // 268.4 MFLOP at half of 2 TFLOP/s: 268.4 us, then the casts.
  EXPECT_NEAR(model.task_times(fp8.g, fp8.node, d).forward,
              std::max(kFlops / 1e12, kBytes / 1e12) + 4.0 * kTokens * kIn / 1e12, 1e-15);
  EXPECT_NEAR(model.task_times(bf16.g, bf16.node, d).forward,
              std::max(kFlops / 1e12, kBytes / 1e12), 1e-15);

  // The presets: H100's fp8 GEMMs at 0.6 x 73.4 / 80.3 of the fp8 peak (the measured best-shape
  // rates of fp8 and bf16), its bf16 GEMMs at 0.6; A100's at 0.6 x 85.9 / 80.1.
  const DeviceSpec& h100 = load_machine("dgx-h100", {0, 8}).device(0);
  EXPECT_DOUBLE_EQ(h100.compute_efficiency, 0.6);
  EXPECT_DOUBLE_EQ(h100.fp8_efficiency(), 0.548);
  EXPECT_DOUBLE_EQ(load_machine("selene", {0, 8}).device(0).compute_efficiency, 0.643);
  EXPECT_DOUBLE_EQ(load_machine("summit", {0, 6}).device(0).fp8_efficiency(), 0.6);
}

TEST(Fp8Training, KeepsTheInputInFp8AndTheWeightsFp8Copies) {
  const MachineSpec h = device(2e12);
  CostModel model(h);
  model.set_counts_weight_updates(false);
  const SegmentProfile pb = profile_segment(linear(false).g, model);
  const SegmentProfile pf = profile_segment(linear(true).g, model);
  ASSERT_TRUE(pb.feasible && pf.feasible);
  // The Linear's input, kept for its weight gradient: bf16, or the fp8 cast.
  EXPECT_DOUBLE_EQ(pb.activations, kTokens * kIn * 2.0);
  EXPECT_DOUBLE_EQ(pf.activations, kTokens * kIn * 1.0);
  EXPECT_DOUBLE_EQ(pb.parameters, kIn * kOut);
  EXPECT_DOUBLE_EQ(pb.fp8_parameters, 0);
  EXPECT_DOUBLE_EQ(pf.fp8_parameters, kIn * kOut);
}

// On an H100, a Llama in fp8 trains faster than in bf16 with the same layout, and holds the fp8
// weight copies (2 more bytes a parameter of its GEMMs).
TEST(Fp8Training, LlamaOnH100WithThePublishedLayoutsKnobs) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 8});
  Graph bf16 = load_model_for_devices("llama-tiny", 8, 32);
  set_compute_dtype(bf16, DataType::BFloat16);
  Graph fp8 = bf16;
  set_fp8_gemms(fp8);
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 2;
  o.layout.pipeline_stages = 2;
  o.layout.micro_batches = 4;
  o.layout.interleave = 1;
  o.layout.recompute = Recompute::None;
  o.layout.zero_stage = 1;
  const Plan pb = optimize_plan(bf16, machine, o);
  const Plan pf = optimize_plan(fp8, machine, o);
  ASSERT_TRUE(pb.pipeline && pf.pipeline);
  EXPECT_EQ(pf.summary.dtype, "fp8");
  EXPECT_EQ(pb.summary.dtype, "bfloat16");
  EXPECT_LT(pf.summary.iteration_time_ms, pb.summary.iteration_time_ms);
  // Megatron-LM's FLOP count does not change with the precision.
  EXPECT_DOUBLE_EQ(pf.summary.model_flops_per_iteration, pb.summary.model_flops_per_iteration);
  EXPECT_GT(pf.pipeline->rank_memory[0].weights, pb.pipeline->rank_memory[0].weights);
  // On A100s, which have no fp8 tensor cores, the plan runs and says bf16.
  const Plan a100 = optimize_plan(fp8, load_machine("dgx-a100", {0, 8}), o);
  EXPECT_EQ(a100.summary.dtype, "bfloat16");
}

}  // namespace unity::fp8_training_test
