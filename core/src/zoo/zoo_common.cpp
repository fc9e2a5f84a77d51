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

}  // namespace unity::zoo::detail
