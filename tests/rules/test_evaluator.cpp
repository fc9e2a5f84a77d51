// The evaluator: reference numerics of the operators, and what parallel operators do to replicas and
// micro-batches.
#include <gtest/gtest.h>

#include "unity/rules/evaluator.h"

using namespace unity;
using namespace unity::rules;

namespace {

DenseTensor tensor(std::vector<std::int64_t> sizes, std::vector<double> data) {
  DenseTensor t(std::move(sizes));
  t.data = std::move(data);
  return t;
}

ParallelValue run(const Operator& op, const std::vector<const ParallelValue*>& in) {
  auto r = evaluate(op, in);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.ok() ? r.outputs.at(0) : ParallelValue{};
}

std::string error_of(const Operator& op, const std::vector<const ParallelValue*>& in) {
  return evaluate(op, in).error;
}

Operator op(OpType t, Attributes a = {}) { return Operator{t, std::move(a), ""}; }

}  // namespace

TEST(Evaluator, LinearMatchesAHandComputedProduct) {
  const auto x = ParallelValue::serial(tensor({2, 3}, {1, 2, 3, 4, 5, 6}));
  const auto w = ParallelValue::serial(tensor({3, 2}, {1, 0, 0, 1, 1, 1}));
  const auto b = ParallelValue::serial(tensor({2}, {10, 20}));
  const auto y = run(op(OpType::Linear, {{"out_features", std::int64_t{2}}}), {&x, &w, &b});
  EXPECT_EQ(y.data[0].data, (std::vector<double>{14, 25, 20, 31}));
}

TEST(Evaluator, ASplitReductionLeavesPartialSumsThatReduceToTheProduct) {
  const auto x = ParallelValue::serial(tensor({1, 4}, {1, 2, 3, 4}));
  const auto w = ParallelValue::serial(tensor({4, 1}, {1, 10, 100, 1000}));
  const auto px = run(op(OpType::Partition, {{"dim", std::int64_t{-1}}, {"degree", std::int64_t{2}}}), {&x});
  const auto pw = run(op(OpType::Partition, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}}), {&w});
  const auto partial = run(op(OpType::Linear, {{"out_features", std::int64_t{1}}}), {&px, &pw});
  // Each replica holds the product over its block of the reduction dim: 1*1 + 2*10, 3*100 + 4*1000.
  ASSERT_EQ(partial.shape.replica, 2);
  EXPECT_EQ(partial.layout, ReplicaLayout::partials(2));
  EXPECT_EQ(partial.data[0].data, (std::vector<double>{21}));
  EXPECT_EQ(partial.data[1].data, (std::vector<double>{4300}));
  const auto sum = run(op(OpType::Reduce, {{"degree", std::int64_t{2}}}), {&partial});
  EXPECT_EQ(sum.data[0].data, (std::vector<double>{4321}));
  EXPECT_TRUE(sum.shape.is_serial());
}

TEST(Evaluator, MeaninglessReadsOfReplicasAreUndefined) {
  const auto x = ParallelValue::serial(tensor({2}, {-1, 2}));
  const auto copies = run(op(OpType::Replicate, {{"degree", std::int64_t{2}}}), {&x});
  EXPECT_EQ(copies.layout, ReplicaLayout::copies(2));
  // Summing copies would double the value.
  EXPECT_NE(error_of(op(OpType::Reduce, {{"degree", std::int64_t{2}}}), {&copies}).find("not partial sums"),
            std::string::npos);
  ParallelValue partial = copies;
  partial.layout = ReplicaLayout::partials(2);
  // A non-linear operator cannot read partial sums; a linear one can.
  EXPECT_NE(error_of(op(OpType::Relu), {&partial}).find("partial sums"), std::string::npos);
  const auto scaled = run(op(OpType::ScalarMul, {{"scalar", 3.0}}), {&partial});
  EXPECT_EQ(scaled.data[1].data, (std::vector<double>{-3, 6}));
}

TEST(Evaluator, PipelineMakesMicroBatchesThatBatchGathers) {
  const auto x = ParallelValue::serial(tensor({4, 1}, {1, 2, 3, 4}));
  const auto pipe = run(op(OpType::Pipeline, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}}), {&x});
  EXPECT_EQ(pipe.stages, 2);
  EXPECT_EQ(pipe.shape.dims[0].size, 2);
  EXPECT_EQ(pipe.piece(1, 0).data, (std::vector<double>{3, 4}));
  const auto relu = run(op(OpType::ScalarMul, {{"scalar", 2.0}}), {&pipe});
  const auto back = run(op(OpType::Batch, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}}), {&relu});
  EXPECT_EQ(back.stages, 1);
  EXPECT_EQ(back.data[0].data, (std::vector<double>{2, 4, 6, 8}));
}

TEST(Evaluator, BatchNormStatisticsArePerSamplePartition) {
  const auto x = ParallelValue::serial(tensor({4, 1}, {0, 2, 10, 14}));
  const auto s = ParallelValue::serial(tensor({1}, {1}));
  const auto b = ParallelValue::serial(tensor({1}, {0}));
  const Operator bn = op(OpType::BatchNorm, {{"epsilon", 1e-12}});
  const auto whole = run(bn, {&x, &s, &b});
  const auto px = run(op(OpType::Partition, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}}), {&x});
  const auto rs = run(op(OpType::Replicate, {{"degree", std::int64_t{2}}}), {&s});
  const auto rb = run(op(OpType::Replicate, {{"degree", std::int64_t{2}}}), {&b});
  const auto split = run(bn, {&px, &rs, &rb});
  // Each half is normalised on its own: [-1, 1] and [-1, 1], not the whole batch's statistics.
  EXPECT_TRUE(approx_equal(split.data[0], tensor({4, 1}, {-1, 1, -1, 1}), 1e-6));
  EXPECT_FALSE(approx_equal(whole.data[0], split.data[0]));
}

TEST(Evaluator, Conv2DMatchesAHandComputedConvolution) {
  // 1x1x3x3 input, 1x1x2x2 kernel of ones: each output is the sum of a 2x2 window.
  const auto x = ParallelValue::serial(tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const auto w = ParallelValue::serial(tensor({1, 1, 2, 2}, {1, 1, 1, 1}));
  const auto y = run(op(OpType::Conv2D, {{"out_channels", std::int64_t{1}}, {"kernel", std::vector<std::int64_t>{2, 2}}}),
                     {&x, &w});
  EXPECT_EQ(y.data[0].data, (std::vector<double>{12, 16, 24, 28}));
}

TEST(Evaluator, FingerprintsIgnoreRoundingButNotDegrees) {
  const auto a = ParallelValue::serial(tensor({2}, {0.1 + 0.2, 1}));
  const auto b = ParallelValue::serial(tensor({2}, {0.3, 1}));
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  const auto p = run(op(OpType::Partition, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}}), {&b});
  EXPECT_NE(fingerprint(p), fingerprint(b));
}

// Heads of their own size (2 heads of 2 on E = 2: w_q, w_k, w_v [2, 4], w_o [4, 2]). With one key
// the softmax is 1, so each head's context is its slice of v w_v: [1, 2] and [2, 1], which w_o's
// rows scale to [1, 20] and [200, 1000]. A head split leaves exactly these as partial sums.
TEST(Evaluator, AttentionWithItsOwnHeadSizeSplitsByHeads) {
  const auto x = ParallelValue::serial(tensor({1, 1, 2}, {1, 2}));
  const auto wqk = ParallelValue::serial(tensor({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  const auto wv = ParallelValue::serial(tensor({2, 4}, {1, 0, 0, 1, 0, 1, 1, 0}));
  const auto wo = ParallelValue::serial(tensor({4, 2}, {1, 0, 0, 10, 100, 0, 0, 1000}));
  const Operator mha = op(OpType::MultiHeadAttention,
                          {{"num_heads", std::int64_t{2}}, {"head_dim", std::int64_t{2}}});
  const auto whole = run(mha, {&x, &x, &x, &wqk, &wqk, &wv, &wo});
  EXPECT_EQ(whole.data[0].data, (std::vector<double>{201, 1020}));
  auto split = [](std::int64_t dim) {
    return op(OpType::Partition, {{"dim", dim}, {"degree", std::int64_t{2}}});
  };
  const auto rx = run(op(OpType::Replicate, {{"degree", std::int64_t{2}}}), {&x});
  const auto pq = run(split(1), {&wqk});
  const auto pv = run(split(1), {&wv});
  const auto po = run(split(0), {&wo});
  const auto partial = run(mha, {&rx, &rx, &rx, &pq, &pq, &pv, &po});
  ASSERT_EQ(partial.shape.replica, 2);
  EXPECT_EQ(partial.data[0].data, (std::vector<double>{1, 20}));
  EXPECT_EQ(partial.data[1].data, (std::vector<double>{200, 1000}));
  const auto sum = run(op(OpType::Reduce, {{"degree", std::int64_t{2}}}), {&partial});
  EXPECT_EQ(sum.data[0].data, whole.data[0].data);
}
