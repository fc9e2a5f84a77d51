// Every operator's backward pass against central differences of its forward pass. Each operand is a
// Weight, so the gradient of every input is checked, and the loss is an MSE against a random
// target.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "gradient_check.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/reduction.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"

using namespace unity;
using namespace unity::executor;
using unity::testing::Check;
using unity::testing::check_gradients;
using unity::testing::loss_of;

namespace {

TensorRef linear(GraphBuilder& b, TensorRef x, std::int64_t out, const std::string& act,
                 bool bias) {
  std::vector<TensorRef> in{x, b.weight("w", {b.shape(x).dims.back().size, out})};
  if (bias) in.push_back(b.weight("b", {out}));
  return b.op(OpType::Linear, {{"out_features", out}, {"activation", act}}, in, "linear");
}

}  // namespace

TEST(GradientCheck, Linear) {
  for (const char* act : {"none", "relu", "gelu", "sigmoid", "tanh"})
    check_gradients([&](GraphBuilder& b) {
      return linear(b, b.weight("x", {4, 3, 5}), 6, act, true);
    });
}

TEST(GradientCheck, MatMulSharedAndBatched) {
  check_gradients([](GraphBuilder& b) {
    return b.matmul(b.weight("a", {2, 3, 4}), b.weight("b", {4, 5}), "mm");
  });
  check_gradients([](GraphBuilder& b) {
    return b.matmul(b.weight("a", {3, 4}), b.weight("b", {4, 2}), "mm");
  });
  check_gradients([](GraphBuilder& b) {
    return b.batch_matmul(b.weight("a", {2, 3, 4}), b.weight("b", {2, 4, 5}), "bmm");
  });
}

TEST(GradientCheck, Conv2DWithStridePaddingGroupsDilationBias) {
  check_gradients([](GraphBuilder& b) {
    return b.conv2d(b.weight("x", {2, 4, 7, 6}), 6, {3, 3}, {2, 1}, {1, 1}, "conv", 2, true,
                    Activation::Sigmoid);
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Conv2D,
                {{"out_channels", std::int64_t{3}},
                 {"kernel", std::vector<std::int64_t>{3, 2}},
                 {"stride", std::vector<std::int64_t>{1, 1}},
                 {"padding", std::vector<std::int64_t>{2, 1}},
                 {"dilation", std::vector<std::int64_t>{2, 1}}},
                {b.weight("x", {1, 2, 6, 5}), b.weight("w", {3, 2, 3, 2})}, "dilated");
  });
}

// Depthwise (a group a channel): the CPU backend runs it directly, not through columns; with
// stride, dilation and padding on both axes, 2-D and 3-D, and as a ConvTranspose.
TEST(GradientCheck, DepthwiseConvolutions) {
  using Ints = std::vector<std::int64_t>;
  check_gradients([](GraphBuilder& b) {
    return b.conv2d(b.weight("x", {2, 3, 7, 6}), 3, {3, 3}, {2, 1}, {1, 2}, "dw", 3, true);
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Conv2D,
                {{"out_channels", std::int64_t{2}},
                 {"kernel", Ints{2, 3, 2}},
                 {"stride", Ints{1, 2, 2}},
                 {"padding", Ints{1, 1, 1}},
                 {"dilation", Ints{1, 1, 2}},
                 {"groups", std::int64_t{2}}},
                {b.weight("x", {1, 2, 3, 6, 7}), b.weight("w", {2, 1, 2, 3, 2})}, "dw3d");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::ConvTranspose,
                {{"out_channels", std::int64_t{3}},
                 {"kernel", Ints{3, 3}},
                 {"stride", Ints{2, 2}},
                 {"padding", Ints{1, 1}},
                 {"groups", std::int64_t{3}}},
                {b.weight("x", {2, 3, 4, 3}), b.weight("w", {3, 1, 3, 3})}, "dwt");
  });
}

TEST(GradientCheck, Conv1DAnd3D) {
  using Ints = std::vector<std::int64_t>;
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Conv2D,
                {{"out_channels", std::int64_t{4}},
                 {"kernel", Ints{3}},
                 {"stride", Ints{2}},
                 {"padding", Ints{1}},
                 {"dilation", Ints{1}}},
                {b.weight("x", {2, 3, 9}), b.weight("w", {4, 3, 3}), b.weight("b", {4})}, "conv1d");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Conv2D,
                {{"out_channels", std::int64_t{4}},
                 {"kernel", Ints{2, 3, 2}},
                 {"stride", Ints{1, 2, 1}},
                 {"padding", Ints{1, 1, 0}},
                 {"dilation", Ints{1, 1, 2}},
                 {"groups", std::int64_t{2}}},
                {b.weight("x", {2, 2, 3, 5, 5}), b.weight("w", {4, 1, 2, 3, 2})}, "conv3d");
  });
}

TEST(GradientCheck, ConvTranspose) {
  using Ints = std::vector<std::int64_t>;
  // 2-D with stride, padding, output_padding, dilation and a bias.
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::ConvTranspose,
                {{"out_channels", std::int64_t{3}},
                 {"kernel", Ints{3, 2}},
                 {"stride", Ints{2, 3}},
                 {"padding", Ints{1, 0}},
                 {"dilation", Ints{1, 2}},
                 {"output_padding", Ints{1, 1}}},
                {b.weight("x", {2, 2, 3, 4}), b.weight("w", {2, 3, 3, 2}), b.weight("b", {3})},
                "deconv");
  });
  // 1-D grouped with a negative output_padding (ONNX end pads larger than the begins), and 3-D.
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::ConvTranspose,
                {{"out_channels", std::int64_t{4}},
                 {"kernel", Ints{3}},
                 {"stride", Ints{2}},
                 {"padding", Ints{1}},
                 {"output_padding", Ints{-1}},
                 {"groups", std::int64_t{2}}},
                {b.weight("x", {2, 4, 5}), b.weight("w", {4, 2, 3})}, "deconv1d");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::ConvTranspose,
                {{"out_channels", std::int64_t{2}},
                 {"kernel", Ints{2, 2, 3}},
                 {"stride", Ints{2, 1, 2}},
                 {"padding", Ints{0, 1, 1}}},
                {b.weight("x", {1, 3, 2, 3, 3}), b.weight("w", {3, 2, 2, 2, 3})}, "deconv3d");
  });
}

TEST(GradientCheck, Pooling1DAnd3D) {
  using Ints = std::vector<std::int64_t>;
  for (const char* pool : {"max", "avg"}) {
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Pool2D,
                  {{"pool", std::string(pool)},
                   {"kernel", Ints{3}},
                   {"stride", Ints{2}},
                   {"padding", Ints{1}}},
                  {b.weight("x", {2, 3, 9})}, "pool1d");
    });
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Pool2D,
                  {{"pool", std::string(pool)},
                   {"kernel", Ints{2, 3, 2}},
                   {"stride", Ints{2, 2, 1}},
                   {"padding", Ints{0, 1, 0}}},
                  {b.weight("x", {2, 2, 4, 5, 3})}, "pool3d");
    });
  }
}

// ONNX's asymmetric pads (and ceil_mode's partial window), dilations and count_include_pad.
TEST(GradientCheck, PoolingAsymmetricDilated) {
  using Ints = std::vector<std::int64_t>;
  for (const char* pool : {"max", "avg"})
    for (std::int64_t count_pad : {0, 1}) {
      if (count_pad && std::string(pool) == "max") continue;
      check_gradients([&](GraphBuilder& b) {
        return b.op(OpType::Pool2D,
                    {{"pool", std::string(pool)},
                     {"kernel", Ints{3, 2}},
                     {"stride", Ints{2, 1}},
                     {"padding", Ints{1, 0}},
                     {"padding_end", Ints{2, 1}},
                     {"dilation", Ints{2, 1}},
                     {"count_include_pad", count_pad}},
                    {b.weight("x", {2, 3, 8, 5})}, "pool");
      });
    }
}

TEST(GradientCheck, Pooling) {
  check_gradients([](GraphBuilder& b) {
    return b.max_pool(b.weight("x", {2, 3, 7, 7}), {3, 3}, {2, 2}, {1, 1}, "max");
  });
  check_gradients([](GraphBuilder& b) {
    return b.avg_pool(b.weight("x", {2, 3, 6, 6}), {3, 3}, {2, 2}, {1, 1}, "avg");
  });
  check_gradients([](GraphBuilder& b) {
    return b.global_avg_pool(b.weight("x", {2, 3, 4, 5}), "gap");
  });
}

// Resize's backward is the transpose of its interpolation: every mode, up and down, a split of
// the axes that pass through (N) left alone.
TEST(GradientCheck, Resize) {
  using Ints = std::vector<std::int64_t>;
  struct Case {
    const char* mode;
    const char* coordinates;
    Ints sizes;
  };
  for (const Case& k :
       {Case{"nearest", "asymmetric", {8, 9}}, Case{"linear", "half_pixel", {7, 3}},
        Case{"linear", "align_corners", {3, 8}}, Case{"linear", "pytorch_half_pixel", {1, 6}},
        Case{"cubic", "half_pixel", {9, 4}}}) {
    Attributes a{{"axes", Ints{2, 3}},
                 {"sizes", k.sizes},
                 {"mode", std::string(k.mode)},
                 {"coordinate_transformation_mode", std::string(k.coordinates)}};
    if (std::string(k.mode) == "nearest") a.set("nearest_mode", std::string("floor"));
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Resize, a, {b.weight("x", {2, 3, 4, 5})}, "resize");
    });
  }
  // Trilinear, exclude_outside cubic.
  check_gradients([](GraphBuilder& b) {
    return b.op(
        OpType::Resize,
        {{"axes", Ints{1, 2, 3}}, {"sizes", Ints{4, 5, 3}}, {"mode", std::string("linear")}},
        {b.weight("x", {2, 3, 2, 4})}, "trilinear");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Resize,
                {{"axes", Ints{1}},
                 {"sizes", Ints{7}},
                 {"mode", std::string("cubic")},
                 {"cubic_coeff_a", -0.5},
                 {"exclude_outside", std::int64_t{1}}},
                {b.weight("x", {3, 4})}, "cubic1d");
  });
}

TEST(GradientCheck, Normalisation) {
  check_gradients([](GraphBuilder& b) {
    return b.batch_norm(b.weight("x", {4, 3, 3, 2}), "bn", true);
  });
  check_gradients([](GraphBuilder& b) { return b.batch_norm(b.weight("x", {5, 4}), "bn1d"); });
  check_gradients([](GraphBuilder& b) { return b.layer_norm(b.weight("x", {3, 4, 6}), "ln"); });
  check_gradients([](GraphBuilder& b) { return b.rms_norm(b.weight("x", {3, 4, 6}), "rms"); });
}

// RMSNorm's forward pass against y = x / sqrt(mean(x^2) + eps) * gamma computed here: with that y
// as the MSE target the loss vanishes; LayerNorm (which subtracts the mean) misses it.
TEST(GradientCheck, RmsNormForward) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f, 0.2f, 0.4f, -0.1f, 2.0f};
  const std::vector<float> gamma = {1.0f, 0.5f, -1.5f, 2.0f};
  std::vector<float> expected;
  for (int r = 0; r < 2; ++r) {
    double squares = 0;
    for (int c = 0; c < 4; ++c) squares += x[r * 4 + c] * x[r * 4 + c];
    const double scale = 1.0 / std::sqrt(squares / 4 + 1e-5);
    for (int c = 0; c < 4; ++c)
      expected.push_back(static_cast<float>(x[r * 4 + c] * scale * gamma[c]));
  }
  for (const bool rms : {true, false}) {
    Graph g;
    GraphBuilder b(g);
    TensorRef xs = b.weight("x", {2, 4});
    TensorRef gs = b.weight("gamma", {4});
    std::vector<TensorRef> in{xs, gs};
    if (!rms) in.push_back(b.weight("beta", {4}));
    const Attributes attrs = rms ? Attributes{{"rms", std::int64_t{1}}} : Attributes{};
    TensorRef y = b.op(OpType::LayerNorm, attrs, in, "norm");
    TensorRef target = b.input("target", {2, 4});
    b.mse_loss(y, target, "loss");
    auto host = [](std::vector<std::int64_t> shape, std::vector<float> values) {
      HostTensor h;
      h.shape = std::move(shape);
      h.values = std::move(values);
      return h;
    };
    std::map<NodeId, HostTensor> sources;
    sources[xs.node] = host({2, 4}, x);
    sources[gs.node] = host({4}, gamma);
    if (!rms) sources[in[2].node] = host({4}, std::vector<float>(4, 0.0f));
    sources[target.node] = host({2, 4}, expected);
    const double loss = loss_of(lower_plan(g, single_device_views(g), 1), sources);
    if (rms)
      EXPECT_NEAR(loss, 0.0, 1e-10);
    else
      EXPECT_GT(loss, 1e-2);
  }
}

// Grouped-query attention and rotary embeddings, alone and together, with and without the mask.
TEST(GradientCheck, GroupedQueryAndRotaryAttention) {
  for (const std::int64_t kv_heads : {1, 2, 4}) {
    for (const bool rotary : {false, true}) {
      SCOPED_TRACE(fmt::format("{} key/value heads, rotary {}", kv_heads, rotary));
      check_gradients([&](GraphBuilder& b) {
        TensorRef x = b.weight("x", {2, 4, 8});
        AttentionOptions options;
        options.kv_heads = kv_heads;
        options.rotary = rotary;
        options.causal = kv_heads == 2;
        return b.multi_head_attention(x, x, x, 4, "mha", options);
      });
    }
  }
}

// A sliding window of 2 over 4 positions: each query sees itself and the one before, and the
// gradients match finite differences through the masked scores. A window of 1 leaves each query
// its own value: the attention is then w_o (w_v x) at every position, whatever w_q and w_k are.
TEST(GradientCheck, SlidingWindowAttention) {
  check_gradients([&](GraphBuilder& b) {
    TensorRef x = b.weight("x", {2, 4, 8});
    AttentionOptions options;
    options.kv_heads = 2;
    options.rotary = true;
    options.causal = true;
    options.window = 2;
    return b.multi_head_attention(x, x, x, 4, "mha", options);
  });
  auto output = [](double q_scale) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {1, 3, 4});
    AttentionOptions options;
    options.causal = true;
    options.window = 1;
    TensorRef y = b.multi_head_attention(x, x, x, 2, "mha", options);
    TensorRef target = b.input("target", {1, 3, 4});
    b.mse_loss(y, target, "loss");
    std::map<NodeId, HostTensor> sources;
    for (const auto& [id, node] : g.nodes()) {
      if (node.op.type != OpType::Weight && node.op.type != OpType::Input) continue;
      HostTensor h;
      h.shape = node.outputs[0].sizes();
      std::size_t count = 1;
      for (auto d : h.shape) count *= static_cast<std::size_t>(d);
      for (std::size_t i = 0; i < count; ++i)
        h.values.push_back(
            node.op.name == "target" ? 0.0f
            : node.op.name == "mha.w_q"
                ? static_cast<float>(q_scale * std::sin(1.0 + static_cast<double>(i)))
                : static_cast<float>(std::cos(0.7 * static_cast<double>(i))));
      sources[id] = std::move(h);
    }
    return loss_of(lower_plan(g, single_device_views(g), 1), sources);
  };
  // The queries' weights change the scores but not the output of a one-key window.
  EXPECT_NEAR(output(1.0), output(-3.0), 1e-9);
  EXPECT_GT(output(1.0), 1e-3);
}

// The forward pass of a rotary, grouped-query, causal attention against the same attention written
// out here: projections, the half-split rotation by position / 10000^(2i/d), query head j reading
// key/value head j / 2, a causal softmax, the output projection. With that output as the MSE target
// the loss vanishes; the reference without rotation (or with head j reading kv head j % 2) misses.
TEST(GradientCheck, GroupedQueryRotaryAttentionForward) {
  constexpr int n = 1, s = 3, e = 8, heads = 4, kv = 2, dh = 2, half = 1;
  auto values = [](int count, double seed) {
    std::vector<float> v;
    for (int i = 0; i < count; ++i) v.push_back(static_cast<float>(std::sin(seed * (i + 1))));
    return v;
  };
  const auto x = values(n * s * e, 0.7), wq = values(e * heads * dh, 1.3),
             wk = values(e * kv * dh, 2.1), wv = values(e * kv * dh, 0.9),
             wo = values(heads * dh * e, 1.7);
  auto reference = [&](bool rotate, bool interleave) {
    auto project = [&](const std::vector<float>& w, int width) {
      std::vector<double> y(static_cast<std::size_t>(s * width), 0.0);
      for (int t = 0; t < s; ++t)
        for (int c = 0; c < width; ++c)
          for (int i = 0; i < e; ++i) y[t * width + c] += x[t * e + i] * w[i * width + c];
      return y;
    };
    auto q = project(wq, heads * dh), k = project(wk, kv * dh), v = project(wv, kv * dh);
    auto rotary = [&](std::vector<double>& m, int count) {
      for (int t = 0; t < s; ++t)
        for (int h = 0; h < count; ++h)
          for (int i = 0; i < half; ++i) {
            const double angle = t * std::pow(10000.0, -2.0 * i / dh);
            double& x1 = m[t * count * dh + h * dh + i];
            double& x2 = m[t * count * dh + h * dh + i + half];
            const double a = x1 * std::cos(angle) - x2 * std::sin(angle);
            const double b = x2 * std::cos(angle) + x1 * std::sin(angle);
            x1 = a;
            x2 = b;
          }
    };
    if (rotate) {
      rotary(q, heads);
      rotary(k, kv);
    }
    std::vector<double> context(static_cast<std::size_t>(s * heads * dh), 0.0);
    for (int h = 0; h < heads; ++h) {
      const int g = interleave ? h % kv : h / (heads / kv);
      for (int i = 0; i < s; ++i) {
        std::vector<double> p(s, 0.0);
        double total = 0;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int c = 0; c < dh; ++c)
            dot += q[i * heads * dh + h * dh + c] * k[j * kv * dh + g * dh + c];
          p[j] = std::exp(dot / std::sqrt(double{dh}));
          total += p[j];
        }
        for (int j = 0; j <= i; ++j)
          for (int c = 0; c < dh; ++c)
            context[i * heads * dh + h * dh + c] += p[j] / total * v[j * kv * dh + g * dh + c];
      }
    }
    std::vector<float> y(static_cast<std::size_t>(s * e), 0.0f);
    for (int t = 0; t < s; ++t)
      for (int o = 0; o < e; ++o) {
        double sum = 0;
        for (int c = 0; c < heads * dh; ++c) sum += context[t * heads * dh + c] * wo[c * e + o];
        y[t * e + o] = static_cast<float>(sum);
      }
    return y;
  };
  auto loss_against = [&](const std::vector<float>& expected) {
    Graph g;
    GraphBuilder b(g);
    TensorRef xs = b.weight("x", {n, s, e});
    AttentionOptions options;
    options.kv_heads = kv;
    options.rotary = true;
    options.causal = true;
    TensorRef y = b.multi_head_attention(xs, xs, xs, heads, "mha", options);
    TensorRef target = b.input("target", {n, s, e});
    b.mse_loss(y, target, "loss");
    auto host = [](std::vector<std::int64_t> shape, std::vector<float> v) {
      HostTensor h;
      h.shape = std::move(shape);
      h.values = std::move(v);
      return h;
    };
    std::map<NodeId, HostTensor> sources;
    const std::vector<std::pair<const char*, const std::vector<float>*>> weights = {
        {"mha.w_q", &wq}, {"mha.w_k", &wk}, {"mha.w_v", &wv}, {"mha.w_o", &wo}};
    for (const auto& [id, node] : g.nodes()) {
      for (const auto& [name, w] : weights)
        if (node.op.name == name) sources[id] = host(node.outputs[0].sizes(), *w);
    }
    sources[xs.node] = host({n, s, e}, x);
    sources[target.node] = host({n, s, e}, expected);
    return loss_of(lower_plan(g, single_device_views(g), 1), sources);
  };
  EXPECT_NEAR(loss_against(reference(true, false)), 0.0, 1e-10);
  EXPECT_GT(loss_against(reference(false, false)), 1e-4);
  EXPECT_GT(loss_against(reference(true, true)), 1e-4);
}

// Context parallelism: the queries split in two blocks of the sequence against the whole keys and
// values (a copy each), causal, rotary, grouped-query; both blocks run on one device here. The
// tokens are an activation (x scaled by 1), as in a model: a Weight read both by blocks and whole
// by one rank is kept as two separate shards there, whose gradients the executor does not add.
TEST(GradientCheck, CausalRotaryAttentionSplitBySequence) {
  check_gradients([](GraphBuilder& b) {
    TensorRef x = b.op(OpType::ScalarMul, {{"scalar", 1.0}}, {b.weight("x", {2, 4, 8})}, "tokens");
    TensorRef r = b.replicate(x, 2);
    std::vector<TensorRef> in = {b.partition(x, 1, 2), r, r};
    in.push_back(b.replicate(b.weight("wq", {8, 8}), 2));
    for (const char* w : {"wk", "wv"}) in.push_back(b.replicate(b.weight(w, {8, 4}), 2));
    in.push_back(b.replicate(b.weight("wo", {8, 8}), 2));
    TensorRef y = b.op(OpType::MultiHeadAttention,
                       {{"num_heads", std::int64_t{4}},
                        {"num_kv_heads", std::int64_t{2}},
                        {"rotary", std::int64_t{1}},
                        {"causal", std::int64_t{1}}},
                       in, "mha");
    return b.combine(y, 1, 2);
  });
}

TEST(GradientCheck, CausalMultiHeadAttention) {
  check_gradients([](GraphBuilder& b) {
    TensorRef x = b.weight("x", {2, 4, 8});
    AttentionOptions causal;
    causal.causal = true;
    return b.multi_head_attention(x, x, x, 2, "mha", causal);
  });
}

TEST(GradientCheck, MultiHeadAttention) {
  check_gradients([](GraphBuilder& b) {
    TensorRef q = b.weight("q", {2, 3, 8});
    TensorRef kv = b.weight("kv", {2, 4, 8});
    return b.multi_head_attention(q, kv, kv, 2, "mha");
  });
}

// Heads of their own size: 2 heads of 6 on E = 8 (q, k, v and the context 12 wide), and 3 heads
// of 4 on an E of 8 that 3 does not divide.
TEST(GradientCheck, MultiHeadAttentionWithItsOwnHeadSize) {
  check_gradients([](GraphBuilder& b) {
    TensorRef q = b.weight("q", {2, 3, 8});
    TensorRef kv = b.weight("kv", {2, 4, 8});
    AttentionOptions options;
    options.head_dim = 6;
    return b.multi_head_attention(q, kv, kv, 2, "mha", options);
  });
  check_gradients([](GraphBuilder& b) {
    TensorRef x = b.weight("x", {2, 4, 8});
    AttentionOptions options;
    options.head_dim = 4;
    options.causal = true;
    return b.multi_head_attention(x, x, x, 3, "mha", options);
  });
}

TEST(GradientCheck, Embeddings) {
  check_gradients([](GraphBuilder& b) {
    TensorRef idx = b.op(OpType::Input,
                         {{"shape", std::vector<std::int64_t>{4, 2}},
                          {"dtype", std::string("int64")},
                          {"range", std::int64_t{3}}},
                         {}, "ids");
    return b.op(OpType::Embedding,
                {{"num_entries", std::int64_t{3}}, {"embedding_dim", std::int64_t{5}}},
                {idx, b.weight("table", {3, 5})}, "emb");
  });
  for (const char* agg : {"sum", "mean"})
    check_gradients([&](GraphBuilder& b) {
      TensorRef idx = b.op(
          OpType::Input,
          {{"shape", std::vector<std::int64_t>{4, 3}}, {"dtype", std::string("int64")}}, {}, "ids");
      return b.op(OpType::EmbeddingBag,
                  {{"num_entries", std::int64_t{3}},
                   {"embedding_dim", std::int64_t{5}},
                   {"aggregate", std::string(agg)}},
                  {idx, b.weight("table", {3, 5})}, "bag");
    });
}

TEST(GradientCheck, Unary) {
  for (OpType t : {OpType::Relu, OpType::Gelu, OpType::Sigmoid, OpType::Tanh, OpType::Exp,
                   OpType::Erf, OpType::Identity})
    check_gradients([&](GraphBuilder& b) { return b.unary(t, b.weight("x", {3, 5}), "u"); });
  check_gradients(
      [](GraphBuilder& b) {
        return b.unary(OpType::Sqrt, b.weight("x", {3, 5}), "sqrt");
      },
      {true});
  for (OpType t : {OpType::ScalarAdd, OpType::ScalarMul, OpType::Pow})
    check_gradients(
        [&](GraphBuilder& b) {
          return b.op(t, {{"scalar", 1.7}}, {b.weight("x", {3, 5})}, "s");
        },
        {true});
  check_gradients([](GraphBuilder& b) { return b.dropout(b.weight("x", {6, 7}), 0.3, "drop"); });
}

// Every point-wise operator of the registry, most of them on the kernel made from their core
// definition (make_pointwise_runner), on operands where their function is defined.
TEST(GradientCheck, EveryPointwiseOperator) {
  int checked = 0;
  for (const OperatorDefinition* d : operator_definitions()) {
    if (!d->pointwise) continue;
    Attributes attrs;
    for (const auto& p : d->pointwise->parameters)
      if (!p.default_value) attrs.set(std::string(p.name), 1.7);
    const std::vector<double> params = operator_parameters(Operator{d->info.type, attrs, ""});
    // The first interval, as the finite differences reach past it, on which the function is
    // defined and smooth enough: [-1, 1], then [0.5, 1.5] (Sqrt, Log), [-0.5, 0.5] (Asin,
    // Atanh), [1.5, 2.5] (Acosh).
    Check c;
    for (auto [low, high] : {std::pair{-1.0f, 1.0f}, {0.5f, 1.5f}, {-0.5f, 0.5f}, {1.5f, 2.5f}}) {
      auto defined = [&](double x) {
        return std::isfinite(d->pointwise->value(x, params.data())) &&
               std::isfinite(d->pointwise->derivative(x, d->pointwise->value(x, params.data()),
                                                      params.data()));
      };
      if (defined(low - 0.05) && defined(high + 0.05)) {
        c.low = low;
        c.high = high;
        break;
      }
    }
    check_gradients(
        [&](GraphBuilder& b) {
          return b.op(d->info.type, attrs, {b.weight("x", {4, 6})}, "u");
        },
        c);
    ++checked;
  }
  EXPECT_GE(checked, 38);
}

// Every operator along an axis, on its middle axis and on its last, its parameters at their
// defaults (a required one 3: LRN's size) and all set to 1 (CumSum exclusive and reversed).
TEST(GradientCheck, EveryAxisOperator) {
  int checked = 0;
  for (const OperatorDefinition* d : operator_definitions()) {
    // Hardmax is piecewise constant: a central difference that moves the maximum jumps (its zero
    // gradient is checked in AxisOperators.HardmaxIsTheOneHotOfTheFirstMaximum).
    if (!d->along_axis || d->info.type == OpType::Hardmax) continue;
    for (const bool set : {false, true}) {
      if (set && d->along_axis->parameters.empty()) continue;
      for (std::int64_t axis : {1, 2}) {
        Attributes attrs{{"axis", axis}};
        for (const auto& p : d->along_axis->parameters)
          if (set || !p.default_value) attrs.set(std::string(p.name), set ? 1.0 : 3.0);
        check_gradients([&](GraphBuilder& b) {
          return b.op(d->info.type, attrs, {b.weight("x", {2, 5, 3})}, "f");
        });
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// LRN across the channels with windows of odd and even size (the even one reaches one channel
// further up than down) and AlexNet's constants made larger, so that the window terms weigh;
// Trilu's triangles with a diagonal above and below the main one on a wide matrix.
TEST(GradientCheck, LrnAndTrilu) {
  for (double size : {2.0, 3.0, 5.0})
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::LRN,
                  {{"axis", std::int64_t{1}},
                   {"size", size},
                   {"alpha", 0.5},
                   {"beta", 0.75},
                   {"bias", 2.0}},
                  {b.weight("x", {2, 6, 2, 2})}, "lrn");
    });
  for (double upper : {0.0, 1.0})
    for (double k : {-1.0, 2.0})
      check_gradients([&](GraphBuilder& b) {
        return b.op(OpType::Trilu,
                    {{"axis", std::int64_t{1}}, {"rows", 3.0}, {"upper", upper}, {"k", k}},
                    {b.weight("x", {2, 12})}, "trilu");
      });
}

TEST(GradientCheck, BinaryWithBroadcasting) {
  for (OpType t : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div}) {
    check_gradients(
        [&](GraphBuilder& b) {
          return b.binary(t, b.weight("a", {3, 4}), b.weight("b", {3, 4}), "same");
        },
        {true});
    check_gradients(
        [&](GraphBuilder& b) {
          return b.binary(t, b.weight("a", {2, 3, 4}), b.weight("b", {4}), "row");
        },
        {true});
    check_gradients(
        [&](GraphBuilder& b) {
          return b.binary(t, b.weight("a", {2, 1, 4}), b.weight("b", {3, 1}), "outer");
        },
        {true});
  }
}

TEST(GradientCheck, Layout) {
  check_gradients([](GraphBuilder& b) {
    return b.concat({b.weight("a", {2, 3, 2}), b.weight("b", {2, 1, 2})}, 1, "cat");
  });
  check_gradients([](GraphBuilder& b) {
    auto parts = b.split(b.weight("x", {2, 5}), 1, {2, 3}, "split");
    return b.concat({parts[1], parts[0]}, 1, "swap");
  });
  check_gradients([](GraphBuilder& b) {
    return b.reshape(b.weight("x", {2, 3, 4}), {6, 4}, "reshape");
  });
  check_gradients([](GraphBuilder& b) { return b.flatten(b.weight("x", {2, 3, 4}), "flatten"); });
  check_gradients([](GraphBuilder& b) {
    return b.transpose(b.weight("x", {2, 3, 4}), {2, 0, 1}, "t");
  });
  check_gradients([](GraphBuilder& b) { return b.softmax(b.weight("x", {3, 5}), "softmax"); });
  check_gradients([](GraphBuilder& b) {
    return b.softmax(b.weight("x", {3, 4, 2}), "softmax1", 1);
  });
  check_gradients([](GraphBuilder& b) {
    return b.reduce_sum(b.weight("x", {3, 4, 2}), {1}, true, "sum");
  });
  check_gradients([](GraphBuilder& b) {
    return b.reduce_mean(b.weight("x", {3, 4, 2}), {0, 2}, false, "mean");
  });
}

// Every Reduction over one axis kept and over two axes dropped.
TEST(GradientCheck, Reduction) {
  using Ints = std::vector<std::int64_t>;
  for (const std::string& kind : reduction_names()) {
    Check c;
    c.positive = kind == "log_sum";
    for (const auto& [axes, keep] : {std::pair{Ints{1}, 1}, std::pair{Ints{0, 2}, 0}})
      check_gradients(
          [&](GraphBuilder& b) {
            return b.op(OpType::Reduction,
                        {{"reduction", kind}, {"axes", axes}, {"keepdims", std::int64_t{keep}}},
                        {b.weight("x", {3, 4, 2})}, kind);
          },
          c);
  }
}

TEST(GradientCheck, Losses) {
  check_gradients([](GraphBuilder& b) {
    TensorRef labels = b.op(
        OpType::Input, {{"shape", std::vector<std::int64_t>{5}}, {"dtype", std::string("int64")}},
        {}, "labels");
    return b.softmax_cross_entropy(b.weight("logits", {5, 4}), labels, "sce");
  });
  check_gradients([](GraphBuilder& b) {
    return b.mse_loss(b.weight("p", {4, 3}), b.weight("t", {4, 3}), "mse");
  });
}

namespace {

TensorRef int_input(GraphBuilder& b, const std::string& name, std::vector<std::int64_t> shape,
                    std::int64_t range) {
  return b.op(OpType::Input,
              {{"shape", std::move(shape)}, {"dtype", std::string("int64")}, {"range", range}}, {},
              name);
}

}  // namespace

// The index operators: TopK's values scatter their gradient back to the positions picked,
// GatherElements scatters-adds into its data, ScatterElements passes the gradient of the
// positions it kept to the data and of those it wrote to the updates.
TEST(GradientCheck, IndexOperators) {
  for (std::int64_t largest : {0, 1})
    for (std::int64_t axis : {0, 1})
      check_gradients([&](GraphBuilder& b) {
        return b.op(OpType::TopK, {{"k", std::int64_t{2}}, {"axis", axis}, {"largest", largest}},
                    {b.weight("x", {4, 5})}, "topk");
      });
  for (std::int64_t axis : {0, 1})
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::GatherElements, {{"axis", axis}},
                  {b.weight("data", {4, 5}), int_input(b, "idx", {4, 3}, 4)}, "gather");
    });
  for (const char* reduction : {"none", "add"})
    check_gradients([&](GraphBuilder& b) {
      return b.op(
          OpType::ScatterElements,
          {{"axis", std::int64_t{1}}, {"reduction", std::string(reduction)}},
          {b.weight("data", {4, 5}), int_input(b, "idx", {4, 3}, 5), b.weight("updates", {4, 3})},
          "scatter");
    });
}

// Pad's backward crops dy (constant, with cropping pads too) or scatter-adds it to the reflected
// and edge sources; GatherND scatter-adds into d(data); ScatterND passes the kept positions of dy
// to d(data) and gathers d(updates) (only a position's last write with reduction none; with mul,
// times the other factors).
TEST(GradientCheck, PadAndNdIndexOperators) {
  using Ints = std::vector<std::int64_t>;
  for (const char* mode : {"constant", "reflect", "edge"})
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Pad,
                  {{"pads", Ints{0, 1, 2, 0, 3, 1}}, {"mode", std::string(mode)}, {"value", 0.5}},
                  {b.weight("x", {2, 3, 4})}, "pad");
    });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Pad, {{"pads", Ints{-1, 2, 1, -1}}}, {b.weight("x", {4, 5})}, "crop");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::GatherND, {}, {b.weight("data", {4, 4, 3}), int_input(b, "idx", {5, 2}, 4)},
                "gathernd");
  });
  check_gradients([](GraphBuilder& b) {
    return b.op(OpType::GatherND, {{"batch_dims", std::int64_t{1}}},
                {b.weight("data", {3, 4, 2}), int_input(b, "idx", {3, 2, 1}, 3)}, "gathernd_b");
  });
  for (const char* reduction : {"none", "add", "mul"})
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::ScatterND, {{"reduction", std::string(reduction)}},
                  {b.weight("data", {4, 4, 3}), int_input(b, "idx", {5, 1}, 4),
                   b.weight("updates", {5, 4, 3})},
                  "scatternd");
    });
}

// Experts: every picked expert's SwiGLU (or GELU) FFN, weighted by its gate. With dense random
// gates every expert runs; through a router only the top-k do, and the gradient reaches the
// router's weight through the picked gates alone.
TEST(GradientCheck, Experts) {
  for (bool gated : {true, false})
    check_gradients([&](GraphBuilder& b) {
      return b.experts(b.weight("x", {6, 4}), b.weight("gates", {6, 3}), 5, 2, "experts", gated);
    });
  check_gradients([](GraphBuilder& b) {
    const TensorRef x = b.weight("x", {2, 3, 4});
    const TensorRef gates = b.moe_router(x, 4, 2, "router", /*sigmoid=*/false, /*normalize=*/true);
    return b.experts(x, gates, 3, 2, "experts");
  });
}

// LatentAttention: the query latent and its norm (or queries straight from x), the key/value
// latent and its norm, the shared rotary key, each head's nope and rope parts, causal or not.
TEST(GradientCheck, LatentAttention) {
  for (std::int64_t q_lora : {3, 0})
    for (bool causal : {true, false}) {
      SCOPED_TRACE(q_lora);
      SCOPED_TRACE(causal);
      check_gradients([&](GraphBuilder& b) {
        LatentAttentionSizes z;
        z.heads = 2;
        z.q_lora = q_lora;
        z.kv_lora = 3;
        z.nope = 2;
        z.rope = 2;
        z.v = 3;
        z.causal = causal;
        return b.latent_attention(b.weight("x", {2, 3, 5}), z, "mla");
      });
    }
}

// Where routes dy to x where the condition holds and to y elsewhere, summed over the dims each is
// broadcast along; the condition (a mask input, or one computed by Compare and Logical from an
// input) has no gradient. The masked fill (y an attribute) passes dy to x where it is kept.
TEST(GradientCheck, WhereOperator) {
  auto mask = [](GraphBuilder& b, std::vector<std::int64_t> shape) {
    return b.op(
        OpType::Input,
        {{"shape", std::move(shape)}, {"dtype", std::string("bool")}, {"range", std::int64_t{2}}},
        {}, "mask");
  };
  check_gradients([&](GraphBuilder& b) {
    return b.op(OpType::Where, {}, {mask(b, {4, 5}), b.weight("x", {4, 5}), b.weight("y", {5})},
                "where");
  });
  check_gradients([&](GraphBuilder& b) {
    return b.op(OpType::Where, {}, {mask(b, {4, 1}), b.weight("x", {1, 5}), b.weight("y", {4, 5})},
                "where");
  });
  check_gradients([&](GraphBuilder& b) {
    return b.op(OpType::Where, {{"y", -3.0}}, {mask(b, {2, 3, 4}), b.weight("x", {3, 4})}, "fill");
  });
  check_gradients([](GraphBuilder& b) {
    const TensorRef u = b.input("u", {3, 4});
    const TensorRef positive =
        b.op(OpType::Compare, {{"comparison", std::string("greater")}, {"scalar", 0.0}}, {u}, "gt");
    const TensorRef cond =
        b.op(OpType::Logical, {{"logic", std::string("not")}}, {positive}, "not");
    return b.op(OpType::Where, {}, {cond, b.weight("x", {3, 4}), b.weight("y", {3, 4})}, "where");
  });
}

// Arithmetic: max, min, sum, mean of one to three operands (one broadcast), prelu with a slope per
// channel ([C, 1, 1], nn.PReLU's export) and a scalar one, mod and fmod (dividends of both signs,
// so that floor and trunc differ), pow with a computed exponent of a positive base. A central
// difference across a kink (prelu at x = 0, max at a tie, mod where a / b is whole) checks no
// derivative: the shapes are such that no sampled element lies within eps of one.
TEST(GradientCheck, ArithmeticOperator) {
  auto f = [](const char* function) { return Attributes{{"function", std::string(function)}}; };
  for (const char* function : {"max", "min", "sum", "mean"}) {
    SCOPED_TRACE(function);
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Arithmetic, f(function),
                  {b.weight("a", {3, 4}), b.weight("b", {3, 4}), b.weight("c", {4})}, "op");
    });
    check_gradients([&](GraphBuilder& b) {
      return b.op(OpType::Arithmetic, f(function), {b.weight("a", {2, 5})}, "op");
    });
  }
  check_gradients([&](GraphBuilder& b) {
    Attributes a = f("max");
    a.set("scalar", 0.1);
    return b.op(OpType::Arithmetic, a, {b.weight("a", {4, 5})}, "relu_like");
  });
  check_gradients([&](GraphBuilder& b) {
    return b.op(OpType::Arithmetic, f("prelu"),
                {b.weight("x", {2, 3, 4, 5}), b.weight("slope", {3, 1, 1})}, "prelu");
  });
  check_gradients([&](GraphBuilder& b) {
    return b.op(OpType::Arithmetic, f("prelu"), {b.weight("x", {4, 6}), b.weight("slope", {6})},
                "prelu");
  });
  for (const char* function : {"mod", "fmod"}) {
    SCOPED_TRACE(function);
    // a in [-3, 3], b in [0.9, 1.3] or [-1.3, -0.9]: quotients of both signs, away from b = 0.
    check_gradients([&](GraphBuilder& b) {
      const TensorRef a =
          b.op(OpType::ScalarMul, {{"scalar", 3.0}}, {b.weight("a", {3, 4})}, "scale");
      const TensorRef d =
          b.op(OpType::ScalarAdd, {{"scalar", 1.1}},
               {b.op(OpType::ScalarMul, {{"scalar", 0.2}}, {b.weight("b", {3, 4})}, "narrow")},
               "divisor");
      const TensorRef neg = b.op(OpType::ScalarMul, {{"scalar", -1.0}}, {d}, "negative");
      return b.op(OpType::Arithmetic, f("sum"),
                  {b.op(OpType::Arithmetic, f(function), {a, d}, "positive_divisor"),
                   b.op(OpType::Arithmetic, f(function), {a, neg}, "negative_divisor")},
                  "both");
    });
  }
  check_gradients(
      [&](GraphBuilder& b) {
        return b.op(OpType::Arithmetic, f("pow"), {b.weight("base", {3, 4}), b.weight("e", {4})},
                    "pow");
      },
      Check{true});
}
