// Reduced zoo models: each model's builder takes the scale itself (scale 1 is the paper's model).
// inception-v3 is not offered: its branches' widths do not scale cleanly.
#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "zoo/zoo_models.h"

namespace unity::zoo {
namespace {

struct ScaledBuilder {
  const char* name;
  void (*build)(GraphBuilder&, std::int64_t, double);
};

const ScaledBuilder kScaledBuilders[] = {{"mnist-mlp", detail::build_mnist_mlp},
                                         {"mlp", detail::build_mlp},
                                         {"resnext50", detail::build_resnext50},
                                         {"dlrm", detail::build_dlrm},
                                         {"xdl", detail::build_xdl},
                                         {"bert-large", detail::build_bert_large},
                                         {"candle-uno", detail::build_candle_uno}};

}  // namespace

const std::vector<std::string>& scalable_models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& e : kScaledBuilders) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

Graph build_scaled(const std::string& name, std::int64_t batch, double scale) {
  if (!(scale > 0.0 && scale <= 1.0))
    throw InputError(fmt::format("--scale {}: must be in (0, 1]", scale));
  const ScaledBuilder* entry = nullptr;
  for (const auto& e : kScaledBuilders)
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
