// The zoo's registry: names, descriptions and default per-device batches (paper section 6.1), and
// the dispatch to each model's builder.
#include "unity/core/model_zoo.h"

#include <algorithm>

#include "unity/core/errors.h"
#include "zoo/zoo_models.h"

namespace unity::zoo {
namespace {

struct Entry {
  ModelInfo info;
  void (*build)(GraphBuilder&, std::int64_t batch);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"mlp",
        "MLP of 16 dense 8192x8192 layers with Relu, softmax cross-entropy over 8192 classes "
        "(paper 6.1); batch 256 per device",
        256},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_mlp(b, batch); }},
      {{"mnist-mlp",
        "the paper's Figure 1 MLP on MNIST: 784-512-10, no biases, Relu; batch 64 per device", 64},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_mnist_mlp(b, batch); }},
      {{"resnext50",
        "ResNeXt-50 32x4d (torchvision resnext50_32x4d), ImageNet 224x224; batch 64 per device",
        64},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_resnext50(b, batch); }},
      {{"inception-v3",
        "Inception-v3 (torchvision, no aux logits), ImageNet 299x299; batch 64 per device", 64},
       detail::build_inception_v3},
      {{"bert-large",
        "BERT-Large: 24 layers, hidden 1024, 16 heads, sequence 512, classification head; "
        "batch 4 per device",
        4},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_bert_large(b, batch); }},
      {{"dlrm",
        "DLRM on Criteo Kaggle: 26 embedding tables x 64 dims (17.3 GB weights+gradients), "
        "concat interaction, MLPs 13-512-256-64 / 512-256-1; batch 1024 per device",
        1024},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_dlrm(b, batch); }},
      {{"xdl",
        "XDL-style ads CTR model on Criteo Kaggle: 26 embedding tables x 32 dims concatenated with "
        "dense features, MLP 1024-512-256-1; batch 1024 per device",
        1024},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_xdl(b, batch); }},
      {{"candle-uno",
        "CANDLE Uno drug response: 5 feature encoders of 8 dense 8192-wide layers, concat, "
        "4-layer top MLP, MSE (24 GB weights+gradients); batch 256 per device",
        256},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_candle_uno(b, batch); }},
  };
  return kEntries;
}

const Entry* find(const std::string& name) {
  const auto& all = entries();
  auto it =
      std::find_if(all.begin(), all.end(), [&](const Entry& e) { return e.info.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<ModelInfo>& models() {
  static const std::vector<ModelInfo> kModels = [] {
    std::vector<ModelInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return kModels;
}

bool has_model(const std::string& name) { return find(name) != nullptr; }

Graph build(const std::string& name, std::int64_t batch) {
  const Entry* entry = find(name);
  if (entry == nullptr) {
    std::string known;
    for (const Entry& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
    throw InputError("unknown model '" + name + "'; the zoo has: " + known);
  }
  Graph graph;
  graph.name = entry->info.name;
  graph.batch_size = batch > 0 ? batch : entry->info.default_batch;
  GraphBuilder builder(graph);
  entry->build(builder, graph.batch_size);
  return graph;
}

}  // namespace unity::zoo
