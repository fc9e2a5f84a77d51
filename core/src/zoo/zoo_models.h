#pragma once
// Private to the zoo: one builder per model (each in its own file) and the helpers they share.
// Builders add nodes through the GraphBuilder; model_zoo.cpp names the graph and records its batch.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/graph_builder.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity::zoo::detail {

// The builders with a `scale` (0 < scale <= 1) shrink their widths, table sizes and depths for CPU
// runs (scaled_zoo.h); scale 1 is the paper's model.
void build_mnist_mlp(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_mlp(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_resnext50(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_inception_v3(GraphBuilder& b, std::int64_t batch);
void build_bert_large(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_dlrm(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_xdl(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
void build_candle_uno(GraphBuilder& b, std::int64_t batch, double scale = 1.0);
// Decoder-only transformer families (large-model planning): float tensors are built in float32
// and the zoo casts them to the family's training dtype.
void build_gpt(GraphBuilder& b, std::int64_t batch, const TransformerSizes& shape);
void build_llama(GraphBuilder& b, std::int64_t batch, const TransformerSizes& shape,
                 DataType dtype);

// Ties the head that produced `logits` (a Linear) to the token embedding's table `embedding`.
void tie_head(Graph& g, TensorRef logits, const std::string& embedding);

// Linear layers of the given widths, "prefix.i", each followed by a separate Relu node
// ("prefix.i.relu") except the last one when relu_after_last is false. Relu stays its own node, as
// in an ONNX export, so that fusing it into the Linear is a decision the search makes (paper 2).
TensorRef dense_stack(GraphBuilder& b, TensorRef x, const std::vector<std::int64_t>& widths,
                      const std::string& prefix, bool bias, bool relu_after_last);

// `size` x `scale`, rounded, and at least `minimum`: a scaled model keeps every layer.
std::int64_t scaled_size(std::int64_t size, double scale, std::int64_t minimum);

// Rows of the 26 categorical features of the Criteo Kaggle display-advertising data set (the data
// set of the paper's DLRM and XDL runs, Table 1), as used by facebookresearch/dlrm for that data
// set. 33,762,577 rows in all.
const std::vector<std::int64_t>& criteo_kaggle_table_rows();

// A Criteo click-through model's inputs: its 13 dense features, one row index per categorical
// feature, and the click label.
struct CriteoInputs {
  TensorRef dense;
  std::vector<TensorRef> sparse;
  TensorRef label;
};
CriteoInputs criteo_inputs(GraphBuilder& b, std::int64_t batch);

// One summed embedding bag of `dim` per categorical feature, its rows scaled with the model.
std::vector<TensorRef> criteo_embeddings(GraphBuilder& b, const std::vector<TensorRef>& sparse,
                                         std::int64_t dim, double scale);

}  // namespace unity::zoo::detail
