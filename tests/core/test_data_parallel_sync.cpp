// The data-parallel synchronisation of a pipeline rank's weights (pipeline_cost.h), by hand: what
// each ZeRO stage sends, how long it takes, and what overlapping it with the backward and forward
// passes leaves exposed; gradients of bf16 weights are reduced in fp32.
#include <gtest/gtest.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/pipeline/pipeline_cost.h"

namespace unity::data_parallel_sync_test {
namespace {

// An all-reduce of B bytes takes B / 1 GB/s here: easy numbers.
double one_gb_per_s(double bytes) { return bytes / 1e9; }

DataSyncInput rank(int zero, bool overlap) {
  DataSyncInput in;
  in.parameters = 100e6;  // 100M parameters: buckets of 40M, the last one 0.4 of the whole
  in.gradient_bytes = 4;  // fp32
  in.weight_bytes = 2;    // bf16
  in.zero = zero;
  in.micro_batches = 4;
  in.overlap = overlap;
  in.forward = 0.1;
  in.backward = 0.15;
  in.data_parallel = 8;
  return in;
}

TEST(DataParallelSync, GradientsOfBf16WeightsAreFp32) {
  EXPECT_EQ(gradient_bytes(DataType::BFloat16), 4);
  EXPECT_EQ(gradient_bytes(DataType::Float16), 2);
  EXPECT_EQ(gradient_bytes(DataType::Float32), 4);
  // Mixed-precision Adam: 2 + 4 + 12 bytes a parameter in bf16, 2 + 2 + 12 in fp16.
  EXPECT_EQ(parameter_memory(1, DataType::BFloat16, Optimizer::Adam, 0, 1).total(), 18);
  EXPECT_EQ(parameter_memory(1, DataType::Float16, Optimizer::Adam, 0, 1).total(), 16);
}

TEST(DataParallelSync, EachZeroStageByHand) {
  // 400 MB of gradients, 200 MB of weights; a reduce-scatter is half an all-reduce.
  const DataSync z0 = data_parallel_sync(rank(0, false), one_gb_per_s);
  EXPECT_DOUBLE_EQ(z0.total, 0.4);
  EXPECT_DOUBLE_EQ(z0.exposed, 0.4);
  EXPECT_DOUBLE_EQ(z0.bytes, 2 * 7 * 400e6);  // 2 (k - 1) x the buffer
  const DataSync z1 = data_parallel_sync(rank(1, false), one_gb_per_s);
  EXPECT_DOUBLE_EQ(z1.total, 0.2 + 0.1);
  EXPECT_DOUBLE_EQ(z1.bytes, 7 * (400e6 + 200e6));
  const DataSync z2 = data_parallel_sync(rank(2, false), one_gb_per_s);
  EXPECT_DOUBLE_EQ(z2.total, 4 * 0.2 + 0.1);  // every micro-batch's gradients
  const DataSync z3 = data_parallel_sync(rank(3, false), one_gb_per_s);
  EXPECT_DOUBLE_EQ(z3.total, 4 * (2 * 0.1 + 0.2));  // weights gathered for both passes
  EXPECT_DOUBLE_EQ(z3.bytes, 7 * 4 * (2 * 200e6 + 400e6));
}

TEST(DataParallelSync, OverlapHidesWhatThePassCovers) {
  // ZeRO 0: 0.4 s of all-reduce behind a 0.15 s backward: 0.25 s stays.
  EXPECT_DOUBLE_EQ(data_parallel_sync(rank(0, true), one_gb_per_s).exposed, 0.25);
  // ZeRO 1: the 0.2 s reduce-scatter outlasts the 0.15 s backward by 0.05 s, but its last bucket
  // (0.4 x 0.2 = 0.08 s) waits for the pass's end anyway; the 0.1 s gather fits in the 0.1 s
  // forward but for its last bucket, 0.04 s.
  EXPECT_DOUBLE_EQ(data_parallel_sync(rank(1, true), one_gb_per_s).exposed, 0.08 + 0.04);
  // The same bytes sent either way.
  EXPECT_DOUBLE_EQ(data_parallel_sync(rank(1, true), one_gb_per_s).bytes,
                   data_parallel_sync(rank(1, false), one_gb_per_s).bytes);
  // ZeRO 2: each micro-batch's 0.2 s reduce-scatter but the last hides behind the next one's
  // 0.25 s of forward and backward; the last outlasts its own 0.15 s backward by 0.05 s, less than
  // its last bucket's 0.08 s; the gather leaves 0.04 s. Without overlap all 4 x 0.2 s + 0.1 s stay.
  EXPECT_DOUBLE_EQ(data_parallel_sync(rank(2, true), one_gb_per_s).exposed, 0.08 + 0.04);
  EXPECT_DOUBLE_EQ(data_parallel_sync(rank(2, false), one_gb_per_s).exposed, 4 * 0.2 + 0.1);
  // A reduce-scatter longer than a micro-batch's work leaves the difference for each of the rest.
  DataSyncInput slow = rank(2, true);
  slow.forward = 0.05;
  slow.backward = 0.1;
  EXPECT_DOUBLE_EQ(data_parallel_sync(slow, one_gb_per_s).exposed, 3 * 0.05 + 0.1 + 0.05);
  // One copy: nothing to synchronise.
  DataSyncInput alone = rank(1, true);
  alone.data_parallel = 1;
  EXPECT_EQ(data_parallel_sync(alone, one_gb_per_s).total, 0);
  // Buckets grow with the copies (1M parameters each): with 100 copies a bucket holds 100M, the
  // whole rank, so nothing hides.
  DataSyncInput many = rank(0, true);
  many.data_parallel = 100;
  EXPECT_DOUBLE_EQ(data_parallel_sync(many, one_gb_per_s).exposed, 0.4);
}

TEST(DataParallelSync, BucketsHoldWholeWeightsFromTheModelsEnd) {
  // Weights of 30M, 20M, 25M, 15M, 10M (forward order), buckets of 40M from the end: 10 + 15 +
  // 25 = 50 closes, 20 + 30 = 50 closes: the last bucket is the first two weights, 50M.
  EXPECT_DOUBLE_EQ(last_gradient_bucket({30e6, 20e6, 25e6, 15e6, 10e6}, 40e6), 50e6);
  // From the end, 10 + 30 closes at 40M; the first weight's 5M is left over: the last bucket.
  EXPECT_DOUBLE_EQ(last_gradient_bucket({5e6, 30e6, 10e6}, 40e6), 5e6);
  // A large first weight (a vocabulary's embedding) is a bucket of its own once the four 12M
  // after it have closed one (48M), or joins the 36M three of them leave open.
  EXPECT_DOUBLE_EQ(last_gradient_bucket({250e6, 12e6, 12e6, 12e6, 12e6}, 40e6), 250e6);
  EXPECT_DOUBLE_EQ(last_gradient_bucket({250e6, 12e6, 12e6, 12e6}, 40e6), 250e6 + 36e6);
  EXPECT_DOUBLE_EQ(last_gradient_bucket({}, 40e6), 0);
}

TEST(DataParallelSync, AnEmbeddingFirstLeavesItsWholeReduceAndGatherExposed) {
  // The 100M parameters of rank(): an 80M embedding, then 20M in two weights. From the end: 10 +
  // 10 + 80 closes at 100M, one bucket holding everything, so nothing hides: ZeRO 1's 0.2 s
  // reduce-scatter and 0.1 s gather both stay, against 0.08 + 0.04 s with buckets of 40M.
  DataSyncInput in = rank(1, true);
  in.first_chunk_weights = {80e6, 10e6, 10e6};
  EXPECT_DOUBLE_EQ(data_parallel_sync(in, one_gb_per_s).exposed, 0.2 + 0.1);
  // A 50M embedding after 50M of layers: 25 + 25 closes, then the embedding's 50M: half of the
  // rank's reduce-scatter (0.1 s) waits for the backward's end, half the gather (0.05 s) for the
  // forward's start.
  in.first_chunk_weights = {50e6, 25e6, 25e6};
  EXPECT_DOUBLE_EQ(data_parallel_sync(in, one_gb_per_s).exposed, 0.1 + 0.05);
}

TEST(TensorParallelOverlap, APassPipelinedWithItsCollectivesByHand) {
  // 10 ms of compute, 4 ms of collectives in 4 splits on 16 of 132 SMs: one split (1 ms) exposed,
  // the other 3 ms hidden at 16 / 116 of the compute's pace.
  EXPECT_DOUBLE_EQ(overlapped_pass(0.010, 0.004, 4, 16, 132), 0.010 + 0.001 + 0.003 * 16 / 116);
  // Collectives longer than the compute: what outlasts it stays.
  EXPECT_DOUBLE_EQ(overlapped_pass(0.002, 0.004, 4, 16, 132), 0.002 + 0.002 + 0.002 * 16 / 116);
  // Nothing to overlap; and a device without SMs to share loses no compute.
  EXPECT_DOUBLE_EQ(overlapped_pass(0.010, 0, 4, 16, 132), 0.010);
  EXPECT_DOUBLE_EQ(overlapped_pass(0.010, 0.004, 4, 16, 0), 0.011);
}

}  // namespace
}  // namespace unity::data_parallel_sync_test
