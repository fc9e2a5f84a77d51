// Reduced zoo models. mnist_mlp.cpp, mlp.cpp, dlrm.cpp and xdl.cpp take the scale themselves; here
// are resnext50.cpp's, bert_large.cpp's and candle_uno.cpp's builders with their sizes as
// parameters (inception-v3 is not offered: its branches' widths do not scale cleanly). Sizes round
// to at least a few units so every layer still exists.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/model_zoo.h"
#include "unity/core/scaled_zoo.h"
#include "zoo/zoo_models.h"

namespace unity::zoo {
namespace {

std::int64_t scaled(std::int64_t size, double scale, std::int64_t minimum) {
  return detail::scaled_size(size, scale, minimum);
}

// ResNeXt-50 32x4d with planes, blocks, image size and classes scaled; cardinality 32 is kept while
// the grouped width allows it (every group keeps at least one channel).
void resnext50(GraphBuilder& b, std::int64_t batch, double s) {
  const std::int64_t image = std::max<std::int64_t>(32, scaled(224, s, 32) / 32 * 32);
  const std::int64_t classes = scaled(1000, s, 10);
  TensorRef x = b.input("image", {batch, 3, image, image});
  TensorRef labels = b.input("label", {batch}, DataType::Int64);
  const std::int64_t stem = scaled(64, s, 8);
  x = b.conv2d(x, stem, {7, 7}, {2, 2}, {3, 3}, "conv1");
  x = b.batch_norm(x, "bn1");
  x = b.relu(x, "relu");
  x = b.max_pool(x, {3, 3}, {2, 2}, {1, 1}, "maxpool");
  struct Stage {
    std::int64_t planes, blocks, stride;
  };
  const Stage stages[] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
  std::int64_t channels = stem;
  int index = 1;
  for (const Stage& st : stages) {
    const std::int64_t planes = scaled(st.planes, s, 8);
    const std::int64_t width = planes * 2;  // planes * (4 / 64) * 32, as torchvision computes it
    const std::int64_t groups = std::min<std::int64_t>(32, width);
    const std::int64_t out = planes * 4;
    for (std::int64_t i = 0; i < scaled(st.blocks, s, 1); ++i) {
      const std::string name = fmt::format("layer{}.{}", index, i);
      const std::int64_t stride = i == 0 ? st.stride : 1;
      TensorRef y = b.conv2d(x, width, {1, 1}, {1, 1}, {0, 0}, name + ".conv1");
      y = b.relu(b.batch_norm(y, name + ".bn1"), name + ".relu1");
      y = b.conv2d(y, width, {3, 3}, {stride, stride}, {1, 1}, name + ".conv2", groups);
      y = b.relu(b.batch_norm(y, name + ".bn2"), name + ".relu2");
      y = b.batch_norm(b.conv2d(y, out, {1, 1}, {1, 1}, {0, 0}, name + ".conv3"), name + ".bn3");
      TensorRef shortcut = x;
      if (i == 0 && (stride != 1 || channels != out))
        shortcut =
            b.batch_norm(b.conv2d(x, out, {1, 1}, {stride, stride}, {0, 0}, name + ".downsample.0"),
                         name + ".downsample.1");
      x = b.relu(b.add(y, shortcut, name + ".add"), name + ".relu3");
      channels = out;
    }
    ++index;
  }
  x = b.global_avg_pool(x, "avgpool");
  x = b.flatten(x, "flatten");
  x = b.linear(x, classes, "fc");
  b.softmax_cross_entropy(x, labels, "loss");
}

// BERT-Large with the hidden size, feed-forward size, sequence, vocabulary and depth scaled. The
// head count stays 16 while each head keeps at least 4 dimensions (the hidden size is rounded to
// a multiple of the heads).
void bert_large(GraphBuilder& b, std::int64_t batch, double s) {
  const std::int64_t heads = std::clamp<std::int64_t>(scaled(1024, s, 4) / 4, 1, 16);
  const std::int64_t hidden = std::max(heads, scaled(1024, s, 8) / heads * heads);
  const std::int64_t ff = scaled(4096, s, 8), seq = scaled(512, s, 4);
  const std::int64_t layers = scaled(24, s, 1), vocab = scaled(30522, s, 16);
  TensorRef ids = b.input("input_ids", {batch, seq}, DataType::Int64);
  TensorRef types = b.input("token_type_ids", {batch, seq}, DataType::Int64);
  TensorRef positions = b.input("position_ids", {batch, seq}, DataType::Int64);
  TensorRef labels = b.input("label", {batch}, DataType::Int64);
  TensorRef x = b.embedding(ids, vocab, hidden, "embeddings.word");
  x = b.add(x, b.embedding(positions, seq, hidden, "embeddings.position"),
            "embeddings.add_position");
  x = b.add(x, b.embedding(types, 2, hidden, "embeddings.token_type"), "embeddings.add_token_type");
  x = b.layer_norm(x, "embeddings.layer_norm");
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string n = "encoder." + std::to_string(i);
    TensorRef a = b.multi_head_attention(x, x, x, heads, n + ".attention");
    x = b.layer_norm(b.add(a, x, n + ".attention.add"), n + ".attention.layer_norm");
    TensorRef h = b.gelu(b.linear(x, ff, n + ".ffn.fc1"), n + ".ffn.gelu");
    h = b.linear(h, hidden, n + ".ffn.fc2");
    x = b.layer_norm(b.add(h, x, n + ".ffn.add"), n + ".ffn.layer_norm");
  }
  x = b.reduce_mean(x, {1}, /*keepdims=*/false, "pooler.mean");
  x = b.tanh(b.linear(x, hidden, "pooler.dense"), "pooler.tanh");
  x = b.linear(x, 2, "classifier");
  b.softmax_cross_entropy(x, labels, "loss");
}

// CANDLE Uno with the encoders' and top MLP's widths scaled (the input features stay).
void candle_uno(GraphBuilder& b, std::int64_t batch, double s) {
  const std::int64_t width = scaled(8192, s, 8);
  struct Feature {
    const char* name;
    std::int64_t size;
    bool encoded;
  };
  constexpr Feature kFeatures[] = {
      {"cell.rnaseq", 942, true},
      {"dose1", 1, false},
      {"dose2", 1, false},
      {"drug1.descriptors", 5270, true},
      {"drug1.fingerprints", 2048, true},
      {"drug2.descriptors", 5270, true},
      {"drug2.fingerprints", 2048, true},
  };
  std::vector<TensorRef> encoded;
  for (const Feature& f : kFeatures) {
    TensorRef in = b.input(f.name, {batch, f.size});
    encoded.push_back(f.encoded ? detail::dense_stack(b, in, std::vector<std::int64_t>(8, width),
                                                      std::string(f.name) + ".encoder", false, true)
                                : in);
  }
  TensorRef label = b.input("label", {batch, 1});
  TensorRef x = b.concat(encoded, 1, "concat");
  x = detail::dense_stack(b, x, {width, width, width, width, 1}, "top", false, false);
  b.mse_loss(x, label, "loss");
}

struct Entry {
  const char* name;
  void (*build)(GraphBuilder&, std::int64_t, double);
};

const Entry kEntries[] = {{"mnist-mlp", detail::build_mnist_mlp},
                          {"mlp", detail::build_mlp},
                          {"resnext50", resnext50},
                          {"dlrm", detail::build_dlrm},
                          {"xdl", detail::build_xdl},
                          {"bert-large", bert_large},
                          {"candle-uno", candle_uno}};

}  // namespace

const std::vector<std::string>& scalable_models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& e : kEntries) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

Graph build_scaled(const std::string& name, std::int64_t batch, double scale) {
  if (!(scale > 0.0 && scale <= 1.0))
    throw InputError(fmt::format("--scale {}: must be in (0, 1]", scale));
  const Entry* entry = nullptr;
  for (const auto& e : kEntries)
    if (name == e.name) entry = &e;
  if (!entry)
    throw InputError(fmt::format("'{}' cannot be scaled; --scale works for: {}", name,
                                 fmt::join(scalable_models(), ", ")));
  Graph g;
  g.name = scale == 1.0 ? name : fmt::format("{}@{}", name, scale);
  for (const auto& m : models())
    if (m.name == name && batch <= 0) batch = m.default_batch;
  g.batch_size = batch;
  GraphBuilder b(g);
  entry->build(b, batch, scale);
  return g;
}

}  // namespace unity::zoo
