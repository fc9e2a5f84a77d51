// Helpers shared by the zoo's builders.
#include <algorithm>
#include <cmath>

#include "unity/core/pcg/tied_weights.h"
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void tie_head(Graph& g, TensorRef logits, const std::string& embedding) {
  tie_weight(g, g.node(logits.node).inputs.at(1).node, embedding);
}

TensorRef dense_stack(GraphBuilder& b, TensorRef x, const std::vector<std::int64_t>& widths,
                      const std::string& prefix, bool bias, bool relu_after_last) {
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const std::string name = prefix + "." + std::to_string(i);
    x = b.linear(x, widths[i], name, bias);
    if (i + 1 < widths.size() || relu_after_last) x = b.relu(x, name + ".relu");
  }
  return x;
}

std::int64_t scaled_size(std::int64_t size, double scale, std::int64_t minimum) {
  return std::max<std::int64_t>(
      minimum, static_cast<std::int64_t>(std::llround(static_cast<double>(size) * scale)));
}

const std::vector<std::int64_t>& criteo_kaggle_table_rows() {
  static const std::vector<std::int64_t> rows = {
      1460,  583,  10131227, 2202608, 305, 24,     12517,   633,   3,
      93145, 5683, 8351593,  3194,    27,  14992,  5461306, 10,    5652,
      2173,  4,    7046547,  18,      15,  286181, 105,     142572};
  return rows;
}

CriteoInputs criteo_inputs(GraphBuilder& b, std::int64_t batch) {
  constexpr std::int64_t kDenseFeatures = 13;
  CriteoInputs in;
  in.dense = b.input("dense_features", {batch, kDenseFeatures});
  for (std::size_t i = 0; i < criteo_kaggle_table_rows().size(); ++i)
    in.sparse.push_back(b.input("sparse." + std::to_string(i), {batch, 1}, DataType::Int64));
  in.label = b.input("label", {batch, 1});
  return in;
}

std::vector<TensorRef> criteo_embeddings(GraphBuilder& b, const std::vector<TensorRef>& sparse,
                                         std::int64_t dim, double scale) {
  const std::vector<std::int64_t>& rows = criteo_kaggle_table_rows();
  std::vector<TensorRef> bags;
  for (std::size_t i = 0; i < rows.size(); ++i)
    bags.push_back(b.embedding_bag(sparse[i], scaled_size(rows[i], scale, 2), dim,
                                   "embedding." + std::to_string(i), "sum"));
  return bags;
}

}  // namespace unity::zoo::detail
