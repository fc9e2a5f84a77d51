// DLRM (Naumov et al. 2019) on the Criteo Kaggle data set, as in the paper's evaluation (Table 1,
// section 6.1: batch 1024 per device) and FlexFlow's DLRM example that Unity was built on:
// - 13 dense features -> bottom MLP 13-512-256-64 (Linear with bias, Relu after each layer);
// - 26 categorical features, one id each (Criteo is one-hot: bag size 1) -> one EmbeddingBag (sum)
//   per feature with Criteo Kaggle's real cardinalities (33,762,577 rows in all) and 64 dimensions;
// - "cat" feature interaction: one Concat of the bottom-MLP output and the 26 embeddings (27 x 64 =
//   1728 features). This Concat is the bottleneck that the paper's Figure 16b rewrite removes;
// - top MLP 1728-512-256-1 (Relu, then Sigmoid on the last layer) and an MSE loss against the click
//   label (FlexFlow trains DLRM with mean-squared error).
// Memory: the tables hold 33,762,577 x 64 = 2,160,804,928 floats; with the MLPs the model has
// 2,161,976,705 parameters = 8.65 GB of fp32 weights and as much again in gradients: 17.30 GB
// > 16 GiB (17.18 GB), so, as the paper says, DLRM cannot be trained data-parallel on 16 GB V100s.
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void build_dlrm(GraphBuilder& b, std::int64_t batch, double scale) {
  const std::int64_t embedding_dim = scaled_size(64, scale, 4);
  auto width = [&](std::int64_t w) { return scaled_size(w, scale, 8); };
  const CriteoInputs in = criteo_inputs(b, batch);

  std::vector<TensorRef> features;
  features.push_back(dense_stack(b, in.dense, {width(512), width(256), embedding_dim}, "bottom_mlp",
                                 /*bias=*/true,
                                 /*relu_after_last=*/true));
  for (TensorRef bag : criteo_embeddings(b, in.sparse, embedding_dim, scale))
    features.push_back(bag);
  TensorRef x = b.concat(features, 1, "interaction");
  x = dense_stack(b, x, {width(512), width(256), 1}, "top_mlp", /*bias=*/true,
                  /*relu_after_last=*/false);
  x = b.sigmoid(x, "sigmoid");
  b.mse_loss(x, in.label, "loss");
}

}  // namespace unity::zoo::detail
