// Every operator's backward pass against central differences of its forward pass. Each operand is a
// Weight, so the gradient of every input is checked, and the loss is an MSE against a random
// target.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"

using namespace unity;
using namespace unity::executor;

namespace {

struct Check {
  bool positive = false;  // operands drawn from [0.5, 1.5] (Sqrt, Pow, Div)
  // Otherwise from [low, high].
  float low = -1.0f, high = 1.0f;
  double tolerance = 2e-2;
};

std::map<NodeId, HostTensor> random_sources(const Graph& g, unsigned seed, const Check& c) {
  std::mt19937 rng(seed);
  std::map<NodeId, HostTensor> out;
  for (const auto& [id, n] : g.nodes()) {
    if (!is_source_op(n.op.type)) continue;
    const auto& s = n.outputs[0];
    HostTensor h;
    h.shape = s.sizes();
    const auto count = static_cast<std::size_t>(s.num_elements());
    if (!is_floating(s.dtype)) {
      h.integer = true;
      // Labels and indices: below the smallest class or table size any test uses.
      std::uniform_int_distribution<std::int64_t> pick(0, n.op.attrs.get_int("range", 3) - 1);
      for (std::size_t i = 0; i < count; ++i) h.integers.push_back(pick(rng));
    } else {
      std::uniform_real_distribution<float> u(c.positive ? 0.5f : c.low,
                                              c.positive ? 1.5f : c.high);
      for (std::size_t i = 0; i < count; ++i) h.values.push_back(u(rng));
    }
    out[id] = std::move(h);
  }
  return out;
}

double loss_of(const Program& p, const std::map<NodeId, HostTensor>& sources) {
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  return compute_gradients(p, sources, *backend, *comm).loss;
}

// Builds the graph with `body` (which returns the tensor to fit), adds an MSE loss, and compares
// analytic and numeric gradients of a sample of every weight's elements.
void check_gradients(const std::function<TensorRef(GraphBuilder&)>& body, Check c = {}) {
  Graph g;
  GraphBuilder b(g);
  TensorRef y = body(b);
  if (g.node(y.node).op.type != OpType::SoftmaxCrossEntropy &&
      g.node(y.node).op.type != OpType::MSELoss)
    b.mse_loss(y, b.input("target", g.shape(y).sizes()), "loss");
  const Program p = lower_plan(g, single_device_views(g), 1);
  auto sources = random_sources(g, 7, c);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  const Gradients analytic = compute_gradients(p, sources, *backend, *comm);
  std::mt19937 rng(11);
  int checked = 0;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Weight) continue;
    const auto& grad = analytic.weights.at(n.op.name).values;
    auto& value = sources[id].values;
    std::uniform_int_distribution<std::size_t> pick(0, value.size() - 1);
    for (int k = 0; k < 6; ++k) {
      const std::size_t i = pick(rng);
      const float saved = value[i];
      const float eps = 1e-2f * std::max(1.0f, std::abs(saved));
      value[i] = saved + eps;
      const double up = loss_of(p, sources);
      value[i] = saved - eps;
      const double down = loss_of(p, sources);
      value[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[i], numeric, 1e-4 + c.tolerance * std::abs(numeric))
          << n.op.name << "[" << i << "] of " << g.node(y.node).op.name;
      ++checked;
      if (getenv("SHOW")) printf("%s[%zu] %g %g\n", n.op.name.c_str(), i, grad[i], numeric);
    }
  }
  EXPECT_GT(checked, 0);
}

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

TEST(Lowering, RefusesAttentionTheKernelsDoNotImplement) {
  for (const char* attr : {"num_kv_heads", "rotary"}) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.weight("x", {2, 3, 8});
    AttentionOptions options;
    if (std::string(attr) == "num_kv_heads") options.kv_heads = 1;
    if (std::string(attr) == "rotary") options.rotary = true;
    TensorRef y = b.multi_head_attention(x, x, x, 2, "mha", options);
    b.mse_loss(y, b.input("target", {2, 3, 8}), "loss");
    try {
      lower_plan(g, single_device_views(g), 1);
      ADD_FAILURE() << attr << " was lowered";
    } catch (const LoweringError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("mha"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("'") + attr + "'"), std::string::npos) << what;
    }
  }
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
    const std::vector<double> params = pointwise_parameters(Operator{d->info.type, attrs, ""});
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

// Every operator along an axis, on its middle axis and on its last.
TEST(GradientCheck, EveryAxisOperator) {
  int checked = 0;
  for (const OperatorDefinition* d : operator_definitions()) {
    if (!d->along_axis) continue;
    for (std::int64_t axis : {1, 2})
      check_gradients([&](GraphBuilder& b) {
        return b.op(d->info.type, {{"axis", axis}}, {b.weight("x", {2, 5, 3})}, "f");
      });
    ++checked;
  }
  EXPECT_GE(checked, 1);
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
