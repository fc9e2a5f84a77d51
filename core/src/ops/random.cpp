// Random: fresh numbers shaped like its input, every iteration: normal (`mean`, `scale`), uniform
// in [`low`, `high`), or Bernoulli (1 with the probability its input holds). What a VAE's
// reparameterisation (torch.randn_like), a diffusion model's noise and stochastic depth
// (torch.bernoulli) export: ONNX's RandomNormalLike, RandomUniformLike, RandomNormal,
// RandomUniform and Bernoulli. The numbers are unity/core/ops/random_values.h's: a function of the
// node's seed and each element's index in the whole tensor, so any split draws what one device
// draws. The output has the input's dims and degrees and the `dtype` attribute's type (default
// float32); it reads copies (numbers drawn per copy would not sum) and passes no gradient.
#include <cstring>

#include "shapes/shape_rules.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/random_values.h"
#include "unity/core/pcg/graph.h"

namespace unity {
namespace {

using namespace shape_rules;

std::vector<ParallelTensorShape> infer(const Operator& op,
                                       const std::vector<ParallelTensorShape>& in) {
  random_values::Distribution d;
  const std::string name = op.attrs.get_string("distribution", "normal");
  if (!random_values::distribution_of(name, d))
    fail("distribution '{}' is not one of normal, uniform, bernoulli", name);
  if (d == random_values::Distribution::Bernoulli) expect_floating(in[0], "the probabilities");
  if (d == random_values::Distribution::Uniform &&
      !(op.attrs.get_double("low", 0.0) <= op.attrs.get_double("high", 1.0)))
    fail("low {} is above high {}", op.attrs.get_double("low", 0.0),
         op.attrs.get_double("high", 1.0));
  ParallelTensorShape out = in[0];
  try {
    out.dtype = data_type_from_string(op.attrs.get_string("dtype", "float32"));
  } catch (const InputError& e) {
    fail("{}", e.what());
  }
  return {out};
}

void work(const Graph&, const Node& n, bool, TaskWork& w) {
  const double elements = static_cast<double>(n.outputs.at(0).piece_elements());
  // Two hashes of the element's index and the scaling; Box-Muller's log, sqrt and cosine.
  w.flops = 12.0 * elements;
  if (random_values::random_function(n.op).distribution == random_values::Distribution::Normal)
    w.transcendentals = 3.0 * elements;
  w.backward_ratio = 0;  // no gradient
}

// As the verifier reasons about it: a function of each element's value (Dropout's stand-in),
// which commutes with every change of layout as the executor's draws by global index do.
std::vector<DoubleTensor> evaluate(const Operator& op, const std::vector<DoubleTensor>& in) {
  DoubleTensor out = in.at(0);
  const auto f = random_values::random_function(op);
  for (double& v : out.data) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    v = random_values::draw(f, 0x5eed, static_cast<std::int64_t>(bits), v);
  }
  return {out};
}

}  // namespace

template <>
const OperatorDefinition& define_operator<OpType::Random>() {
  using K = AttributeDeclaration::Kind;
  static const OperatorDefinition d{
      {OpType::Random, "Random", OpCategory::Compute, 1, 1},
      {},
      {},
      "fresh numbers shaped like x each iteration: `distribution` normal (`mean`, `scale`), "
      "uniform (`low`, `high`) or bernoulli (1 with probability x); no gradient",
      {},
      &infer,
      &work,
      SliceLayout{0, 0},
      &evaluate,
      {{"distribution", K::Enum, {"normal", "uniform", "bernoulli"}, AttrValue{"normal"}},
       {"mean", K::Real, {}, AttrValue{0.0}},
       {"scale", K::Real, {}, AttrValue{1.0}},
       {"low", K::Real, {}, AttrValue{0.0}},
       {"high", K::Real, {}, AttrValue{1.0}},
       {"dtype", K::Enum, data_type_names(), AttrValue{"float32"}}}};
  return d;
}

}  // namespace unity
