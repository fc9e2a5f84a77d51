// The CUDA backend against the CPU backend: the same programs' losses and gradients (one GPU), and
// a training run's losses. Without a GPU these skip with the reason; where one exists they run.
#include <gtest/gtest.h>

#include <random>

#include "executor_test_support.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "unity/executor/backends.h"
#include "unity/executor/pipeline_training.h"

using namespace unity;
using namespace unity::executor;
using namespace unity::executor::testing;

namespace {

std::string gpu_missing() {
#if defined(UNITY_HAVE_CUDA)
  for (const auto& b : available_backends())
    if (b.name == "cuda") return b.available ? "" : "needs a GPU: " + b.detail;
  return "no cuda backend";
#else
  return "built without CUDA (UNITY_CUDA_ENABLED is OFF)";
#endif
}

// A transformer block with every kind of operator the zoo's transformers use, plus broadcasting and
// element-wise operators.
Graph transformer_block() {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("tokens", {2, 5, 16});
  TensorRef a = b.multi_head_attention(x, x, x, 4, "mha");
  TensorRef h = b.layer_norm(b.add(a, x, "res1"), "ln1");
  TensorRef f = b.linear(h, 32, "ff1");
  f = b.dropout(b.gelu(f, "gelu"), 0.1, "drop");
  f = b.linear(f, 16, "ff2");
  h = b.layer_norm(b.add(f, h, "res2"), "ln2");
  h = b.mul(b.sigmoid(h, "gate"), b.tanh(h, "t"), "glu");
  TensorRef pooled = b.reduce_mean(h, {1}, false, "pool");
  b.softmax_cross_entropy(b.linear(pooled, 7, "head"), b.input("label", {2}, DataType::Int64),
                          "loss");
  return g;
}

std::vector<Graph> programs_to_compare() {
  return {zoo::build_scaled("mnist-mlp", 8, 0.25), zoo::build_scaled("resnext50", 2, 1.0 / 16),
          zoo::build_scaled("dlrm", 8, 1.0 / 1024), transformer_block()};
}

}  // namespace

TEST(CudaBackend, GradientsEqualTheCpuBackends) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
#if defined(UNITY_HAVE_CUDA)
  for (const Graph& g : programs_to_compare()) {
    SCOPED_TRACE(g.name);
    const Program p = lower_plan(g, single_device_views(g), 1);
    auto cpu = make_cpu_backend(1);
    auto gpu = make_cuda_backend(0);
    auto comm = make_local_communicator();
    const Gradients a = compute_gradients(p, {}, *cpu, *comm);
    const Gradients b = compute_gradients(p, {}, *gpu, *comm);
    EXPECT_NEAR(a.loss, b.loss, 1e-4 * std::abs(a.loss));
    for (const auto& [name, grad] : a.weights) {
      ASSERT_TRUE(b.weights.count(name)) << name;
      EXPECT_LE(relative_difference(b.weights.at(name).values, grad.values), 1e-3) << name;
    }
  }
#endif
}

TEST(CudaBackend, TrainingMatchesTheCpuReference) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
#if defined(UNITY_HAVE_CUDA)
  const Graph g = zoo::build_scaled("mnist-mlp", 32, 1.0);
  const Program p = lower_plan(g, single_device_views(g), 1);
  TrainingOptions o;
  o.iterations = 5;
  o.collect_weights = true;
  auto gpu = make_cuda_backend(0);
  auto comm = make_local_communicator();
  const TrainingResult run = train(p, o, *gpu, *comm);
  expect_matches(run, train_reference(g, o), 1e-4);
#endif
}

// A pipelined plan's micro-batches on one GPU (one stage, 4 micro-batches, with and without
// recomputation): the weights after training equal the CPU's. The multi-GPU pipeline (NCCL ranks,
// point-to-point through host memory) runs through `unity run --backend cuda` in
// cli_test_pipeline_run.cpp.
TEST(CudaPipeline, MicroBatchesOnOneGpuEqualTheCpu) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
#if defined(UNITY_HAVE_CUDA)
  for (const Recompute recompute : {Recompute::None, Recompute::Full}) {
    OptimizeOptions o;
    o.mode = "expert";
    o.layout.tensor_parallel = 1;
    o.layout.pipeline_stages = 1;
    o.layout.micro_batches = 4;
    o.layout.recompute = recompute;
    const Plan plan =
        optimize_plan(load_model_for_devices("gpt-tiny", 1), load_machine("cpu-local", {0, 1}), o);
    ASSERT_TRUE(plan.pipeline.has_value());
    TrainingOptions t;
    t.iterations = 3;
    t.optimizer = "sgd";
    t.collect_weights = true;
    auto cpu = make_cpu_backend(1);
    auto gpu = make_cuda_backend(0);
    auto comm = make_local_communicator();
    const TrainingResult a = train_pipeline(plan, t, *cpu, *comm);
    const TrainingResult b = train_pipeline(plan, t, *gpu, *comm);
    for (std::size_t i = 0; i < a.losses.size(); ++i)
      EXPECT_NEAR(a.losses[i], b.losses[i], 1e-4 * std::abs(a.losses[i]));
    for (const auto& [name, w] : a.weights)
      EXPECT_LE(relative_difference(b.weights.at(name).values, w.values), 1e-3) << name;
  }
#endif
}
