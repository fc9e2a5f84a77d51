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
  const std::int64_t embedding_dim = scaled_size(32, scale, 4);
  auto width = [&](std::int64_t w) { return scaled_size(w, scale, 8); };
  const CriteoInputs in = criteo_inputs(b, batch);

  std::vector<TensorRef> features = {in.dense};
  for (TensorRef bag : criteo_embeddings(b, in.sparse, embedding_dim, scale))
    features.push_back(bag);
  TensorRef x = b.concat(features, 1, "concat");
  x = dense_stack(b, x, {width(1024), width(512), width(256), 1}, "mlp", /*bias=*/true,
                  /*relu_after_last=*/false);
  x = b.sigmoid(x, "sigmoid");
  b.mse_loss(x, in.label, "loss");
}

}  // namespace unity::zoo::detail
