// The paper's MLP benchmark (section 6.1): 16 dense layers with hidden dimension 8192, batch 256
// per device. The input is 8192 wide too, so every layer is an 8192x8192 Linear with bias, with a
// Relu node between consecutive layers. The last layer's 8192 outputs are the logits of a softmax
// cross-entropy over 8192 classes with int64 labels (as FlexFlow's MLP benchmark uses a sparse
// categorical cross-entropy): a label is one int per sample instead of an 8192-wide MSE target.
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void build_mlp(GraphBuilder& b, std::int64_t batch, double scale) {
  const std::int64_t width = scaled_size(8192, scale, 8);
  constexpr int kLayers = 16;
  TensorRef x = b.input("input", {batch, width});
  TensorRef labels = b.input("label", {batch}, DataType::Int64);
  x = dense_stack(b, x, std::vector<std::int64_t>(kLayers, width), "fc", /*bias=*/true,
                  /*relu_after_last=*/false);
  b.softmax_cross_entropy(x, labels, "loss");
}

}  // namespace unity::zoo::detail
