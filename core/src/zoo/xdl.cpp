// An XDL-style ads CTR model (Jiang et al., DLP-KDD 2019; paper Table 1 trains it on Criteo Kaggle,
// batch 1024 per device): sparse features through large embedding tables with sum pooling,
// concatenated with the raw dense features and fed to a deep MLP.
// - 26 categorical Criteo features, one EmbeddingBag (sum, bag size 1: Criteo is one-hot) each with
//   Criteo Kaggle's cardinalities and 32 dimensions;
// - Concat of the 13 dense features and the 26 embeddings (13 + 26 x 32 = 845 features): no bottom
// MLP,
//   unlike DLRM;
// - MLP 845-1024-512-256-1 with Relu, Sigmoid output, MSE loss against the click label.
// Memory: 33,762,577 x 32 = 1,080,402,464 embedding floats (4.32 GB; 8.64 GB with gradients). 32
// dimensions rather than DLRM's 64 because the paper compares XDL against data parallelism, which
// needs the whole model (weights and gradients) to fit on one 16 GB V100; it still has to
// all-reduce 4.3 GB of embedding gradients, which is what makes other plans pay off.
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void build_xdl(GraphBuilder& b, std::int64_t batch, double scale) {
  constexpr std::int64_t kDenseFeatures = 13;
  const std::int64_t embedding_dim = scaled_size(32, scale, 4);
  auto width = [&](std::int64_t w) { return scaled_size(w, scale, 8); };
  const std::vector<std::int64_t>& rows = criteo_kaggle_table_rows();

  TensorRef dense = b.input("dense_features", {batch, kDenseFeatures});
  std::vector<TensorRef> sparse;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    sparse.push_back(b.input("sparse." + std::to_string(i), {batch, 1}, DataType::Int64));
  }
  TensorRef label = b.input("label", {batch, 1});

  std::vector<TensorRef> features = {dense};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    features.push_back(b.embedding_bag(sparse[i], scaled_size(rows[i], scale, 2), embedding_dim,
                                       "embedding." + std::to_string(i), "sum"));
  }
  TensorRef x = b.concat(features, 1, "concat");
  x = dense_stack(b, x, {width(1024), width(512), width(256), 1}, "mlp", /*bias=*/true,
                  /*relu_after_last=*/false);
  x = b.sigmoid(x, "sigmoid");
  b.mse_loss(x, label, "loss");
}

}  // namespace unity::zoo::detail
