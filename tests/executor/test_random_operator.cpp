// The Random operator (core/src/ops/random.cpp, executor/src/ops/random_ops.cpp): its numbers
// follow the distribution asked for, Bernoulli follows its input's probabilities, and a piece of
// the tensor draws the numbers the whole tensor has there (the numbering by global index), which is
// what lets a split plan train like one rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "executor_test_support.h"
#include "unity/core/ops/random_values.h"
#include "unity/core/pcg/graph.h"

using namespace unity;
using unity::executor::HostTensor;

namespace {

struct Moments {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

Moments moments(const std::vector<float>& v) {
  Moments m;
  for (float x : v) {
    m.mean += x;
    m.min = std::min<double>(m.min, x);
    m.max = std::max<double>(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (float x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / static_cast<double>(v.size()));
  return m;
}

std::vector<float> draw(Attributes attrs, std::int64_t rows, std::int64_t cols,
                        const std::vector<float>& input = {}) {
  Graph g;
  const auto x = g.add_input("x", {rows, cols});
  const auto y = g.add(Operator{OpType::Random, std::move(attrs), "noise"}, {x});
  std::map<NodeId, HostTensor> given;
  HostTensor t;
  t.shape = {rows, cols};
  t.values = input.empty() ? std::vector<float>(static_cast<std::size_t>(rows * cols), 0.f) : input;
  given[x.node] = t;
  return unity::executor::testing::evaluate_on_one_device(g, given).at({y, 0}).values;
}

}  // namespace

TEST(RandomOperator, NormalAndUniformNumbersFollowTheirDistributions) {
  // 65,536 draws: the sample mean's standard error is scale / 256.
  const Moments normal = moments(
      draw({{"distribution", std::string("normal")}, {"mean", 2.0}, {"scale", 0.5}}, 256, 256));
  EXPECT_NEAR(normal.mean, 2.0, 0.01);
  EXPECT_NEAR(normal.stddev, 0.5, 0.01);
  EXPECT_LT(normal.min, 2.0 - 4 * 0.5);  // the tails are there
  const Moments uniform = moments(
      draw({{"distribution", std::string("uniform")}, {"low", -1.0}, {"high", 3.0}}, 256, 256));
  EXPECT_NEAR(uniform.mean, 1.0, 0.02);
  EXPECT_NEAR(uniform.stddev, 4.0 / std::sqrt(12.0), 0.01);
  EXPECT_GE(uniform.min, -1.0);
  EXPECT_LT(uniform.max, 3.0);
  EXPECT_LT(uniform.min, -0.99);
}

TEST(RandomOperator, BernoulliKeepsEachElementWithItsProbability) {
  std::vector<float> p(256 * 256);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = i < p.size() / 2 ? 0.1f : 0.75f;
  const auto v = draw({{"distribution", std::string("bernoulli")}}, 256, 256, p);
  const std::size_t half = v.size() / 2;
  double low = 0, high = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_TRUE(v[i] == 0.f || v[i] == 1.f) << i;
    (i < half ? low : high) += v[i];
  }
  EXPECT_NEAR(low / static_cast<double>(half), 0.1, 0.01);
  EXPECT_NEAR(high / static_cast<double>(half), 0.75, 0.01);
}

TEST(RandomOperator, APieceDrawsTheNumbersTheWholeTensorHasThere) {
  // The numbers of rows 2..3 of a [4, 8] tensor, drawn as a piece, are the whole tensor's.
  random_values::RandomFunction f;
  unity::executor::DropoutSpec whole, piece;
  whole.seed = piece.seed = 42;
  whole.global_shape = piece.global_shape = {4, 8};
  whole.origin = {0, 0};
  whole.local_shape = {4, 8};
  piece.origin = {2, 3};
  piece.local_shape = {2, 5};
  std::vector<double> all(32), part(10);
  unity::executor::for_global(whole, [&](std::int64_t i, std::int64_t g) {
    all[static_cast<std::size_t>(i)] = random_values::draw(f, whole.seed, g, 0);
  });
  unity::executor::for_global(piece, [&](std::int64_t i, std::int64_t g) {
    part[static_cast<std::size_t>(i)] = random_values::draw(f, piece.seed, g, 0);
  });
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(part[static_cast<std::size_t>(r * 5 + c)],
                all[static_cast<std::size_t>((r + 2) * 8 + c + 3)]);
  // Another seed (the next iteration) draws other numbers.
  EXPECT_NE(random_values::draw(f, 43, 5, 0), random_values::draw(f, 42, 5, 0));
}

TEST(RandomOperator, ShapesPassTheirDegreesAndRefuseUnknownDistributions) {
  Graph g;
  const auto x = g.add_input("x", {4, 6}, DataType::Int64);
  const auto y =
      g.add(Operator{OpType::Random, {{"distribution", std::string("uniform")}}, "u"}, {x});
  EXPECT_EQ(g.shape({y, 0}).sizes(), (std::vector<std::int64_t>{4, 6}));
  EXPECT_EQ(g.shape({y, 0}).dtype, DataType::Float32);
  EXPECT_THROW(
      g.add(Operator{OpType::Random, {{"distribution", std::string("poisson")}}, "p"}, {x}),
      ShapeError);
  // Bernoulli reads probabilities: an integer tensor is refused.
  EXPECT_THROW(
      g.add(Operator{OpType::Random, {{"distribution", std::string("bernoulli")}}, "b"}, {x}),
      ShapeError);
}
