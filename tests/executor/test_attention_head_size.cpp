// The executor's attention with heads of their own size ("head_dim", not E / num_heads) against a
// reference written here: per head softmax(q_h k_h^T / sqrt(D)) v_h, then w_o. The gradient checks
// and the parallel runs compare the executor with itself, which a wrong head size (the embedding
// over the heads, as before head_dim) would pass: another split of the same width into heads is
// still a consistent function. This test pins the function.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "executor_test_support.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity::executor::attention_head_size_test {
namespace {

constexpr std::int64_t kBatch = 2, kSeq = 4, kHidden = 8;

struct Case {
  std::int64_t heads, head_dim;
  bool causal;
};

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = u(rng);
  return v;
}

// x [n, s, in] @ w [in, out] in double.
std::vector<double> project(const std::vector<float>& x, const std::vector<float>& w,
                            std::int64_t rows, std::int64_t in, std::int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(rows * out), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t i = 0; i < in; ++i)
        y[r * out + o] += double(x[r * in + i]) * w[i * out + o];
  return y;
}

// q, k and v all read `x` [kBatch, kSeq, kHidden].
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& wq,
                              const std::vector<float>& wk, const std::vector<float>& wv,
                              const std::vector<float>& wo, const Case& c) {
  const std::int64_t n = kBatch, s = kSeq, e = kHidden, d = c.head_dim, width = c.heads * d;
  const auto q = project(x, wq, n * s, e, width);
  const auto k = project(x, wk, n * s, e, width);
  const auto v = project(x, wv, n * s, e, width);
  std::vector<double> out(static_cast<std::size_t>(n * s * e), 0.0);
  std::vector<double> p(static_cast<std::size_t>(s));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t h = 0; h < c.heads; ++h)
      for (std::int64_t i = 0; i < s; ++i) {
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (std::int64_t t = 0; t < d; ++t)
            dot += q[(b * s + i) * width + h * d + t] * k[(b * s + j) * width + h * d + t];
          p[j] = c.causal && j > i ? -std::numeric_limits<double>::infinity()
                                   : dot / std::sqrt(double(d));
          top = std::max(top, p[j]);
        }
        for (auto& z : p) sum += (z = std::exp(z - top));
        for (std::int64_t t = 0; t < d; ++t) {
          double context = 0;
          for (std::int64_t j = 0; j < s; ++j)
            context += p[j] / sum * v[(b * s + j) * width + h * d + t];
          for (std::int64_t o = 0; o < e; ++o)
            out[(b * s + i) * e + o] += context * wo[(h * d + t) * e + o];
        }
      }
  return out;
}

HostTensor host(std::vector<std::int64_t> shape, std::vector<float> values) {
  HostTensor h;
  h.shape = std::move(shape);
  h.values = std::move(values);
  return h;
}

TEST(AttentionHeadSize, ForwardEqualsTheReference) {
  // 3 heads of 4 on an E of 8 that 3 does not divide; 2 heads of 6, causal; 4 heads of 4 (wider
  // than E); and 4 heads of 2, the default head size, as a control.
  for (const Case& c :
       {Case{3, 4, false}, Case{2, 6, true}, Case{4, 4, false}, Case{4, 2, false}}) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
    TensorRef y = b.multi_head_attention(x, x, x, c.heads, "mha",
                                         {.head_dim = c.head_dim, .causal = c.causal});
    const std::int64_t width = c.heads * c.head_dim;
    EXPECT_EQ(g.node(y.node).op.attrs.has("head_dim"),
              c.head_dim != kHidden / c.heads || kHidden % c.heads != 0);
    const auto xs = random_values(kBatch * kSeq * kHidden, 1);
    std::map<std::string, std::vector<float>> w = {{"mha.w_q", random_values(kHidden * width, 2)},
                                                   {"mha.w_k", random_values(kHidden * width, 3)},
                                                   {"mha.w_v", random_values(kHidden * width, 4)},
                                                   {"mha.w_o", random_values(width * kHidden, 5)}};
    std::map<NodeId, HostTensor> given;
    for (const auto& [id, n] : g.nodes()) {
      if (n.op.type == OpType::Input) given[id] = host(n.outputs[0].sizes(), xs);
      if (n.op.type == OpType::Weight) given[id] = host(n.outputs[0].sizes(), w.at(n.op.name));
    }
    const auto out = testing::evaluate_on_one_device(g, given);
    ASSERT_EQ(out.size(), 1u);
    const HostTensor& got = out.begin()->second;
    const auto expected = reference(xs, w["mha.w_q"], w["mha.w_k"], w["mha.w_v"], w["mha.w_o"], c);
    ASSERT_EQ(got.values.size(), expected.size());
    double worst = 0;
    for (std::size_t i = 0; i < expected.size(); ++i)
      worst = std::max(worst, std::abs(got.values[i] - expected[i]));
    EXPECT_LT(worst, 1e-5) << c.heads << " heads of " << c.head_dim;
  }
}

}  // namespace
}  // namespace unity::executor::attention_head_size_test
