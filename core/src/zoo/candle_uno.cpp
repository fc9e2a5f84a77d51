// CANDLE Uno (ECP-CANDLE Pilot1, tumour dose-response regression; paper section 6.1: batch 256 per
// device), with the input set and depths of FlexFlow's candle_uno example that Unity was built on:
// - seven inputs: cell.rnaseq (942), dose1 and dose2 (1 each), drug1/drug2 descriptors (5270 each)
//   and drug1/drug2 fingerprints (2048 each);
// - every cell/drug input goes through its own feature encoder of 8 dense layers (Linear without
//   bias, Relu); the doses go in raw;
// - Concat of the 5 encodings and the 2 doses, a top MLP of 4 dense layers (Relu) and a 1-wide
// output
//   regressed with an MSE loss against the measured growth.
// Width: the paper says CANDLE-Uno exceeds one 16 GB V100 and so cannot be trained data-parallel.
// FlexFlow's 4192-wide layers give 0.82G parameters (6.6 GB of fp32 weights + gradients), which
// would fit, so every dense layer here is 8192 wide: 3,013,320,704 parameters, i.e. 12.05 GB of
// weights and 24.1 GB with gradients, > 16 GiB, while the structure stays the paper's.
#include <utility>

#include "zoo/zoo_models.h"

namespace unity::zoo::detail {

void build_candle_uno(GraphBuilder& b, std::int64_t batch, double scale) {
  // Scaled (scaled_zoo.h): the encoders' and the top MLP's widths; the input features stay.
  const std::int64_t width = scaled_size(8192, scale, 8);
  constexpr int kEncoderLayers = 8;
  constexpr int kTopLayers = 4;
  // (input name, features, encoded?) in FlexFlow's order (its std::map of input names).
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

  std::vector<TensorRef> inputs;
  for (const Feature& f : kFeatures) inputs.push_back(b.input(f.name, {batch, f.size}));
  TensorRef label = b.input("label", {batch, 1});

  std::vector<TensorRef> encoded;
  const std::vector<std::int64_t> encoder(kEncoderLayers, width);
  for (std::size_t i = 0; i < std::size(kFeatures); ++i) {
    const Feature& f = kFeatures[i];
    encoded.push_back(f.encoded ? dense_stack(b, inputs[i], encoder,
                                              std::string(f.name) + ".encoder", /*bias=*/false,
                                              /*relu_after_last=*/true)
                                : inputs[i]);
  }
  TensorRef x = b.concat(encoded, 1, "concat");
  std::vector<std::int64_t> top(kTopLayers, width);
  top.push_back(1);
  x = dense_stack(b, x, top, "top", /*bias=*/false, /*relu_after_last=*/false);
  b.mse_loss(x, label, "loss");
}

}  // namespace unity::zoo::detail
