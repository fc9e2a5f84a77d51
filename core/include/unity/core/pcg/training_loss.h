#pragma once
// Training an inference export. torch.onnx.export writes the inference graph: its outputs derive
// from no loss, so there is nothing to train. attach_loss() adds one to each floating output, with
// the labels or targets as new Inputs (the executor synthesises them as it does the zoo's):
// cross-entropy over the last dim (labels: the output's shape without it) or mean squared error
// (targets: the output's shape).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

enum class LossKind { CrossEntropy, Mse };
std::string_view to_string(LossKind k);              // "cross-entropy", "mse"
LossKind loss_kind_from_string(std::string_view s);  // throws InputError

// Whether `id` is a loss operator (SoftmaxCrossEntropy, MSELoss) or reads one, directly or not.
bool derives_from_loss(const Graph& g, NodeId id);

// Whether a sink is an objective of training: it derives from a loss operator, or it is a 0-d
// floating value, a loss the model computes itself (an export of `F.cross_entropy(model(x), y)`
// or `((model(x) - y) ** 2).mean()` ends in one scalar). Training minimises it as it is.
bool is_objective(const Graph& g, TensorRef sink);

// Whether the graph has an objective already: a loss operator, or a sink that is its own loss.
bool has_loss(const Graph& g);

struct AttachedLoss {
  LossKind kind = LossKind::CrossEntropy;
  bool chosen = false;               // the kind was chosen here (none was asked for)
  std::vector<std::string> outputs;  // "logits [64, 10]": the outputs that got one
  // Nothing was attached: the model ends in its own loss, `outputs` (0-d), trained as they are.
  bool own = false;
};

// A model with a loss (has_loss) comes back unchanged: nullopt when it has a loss operator, its
// own loss outputs (`own`) when it ends in 0-d values of its own, so that a command can say so;
// asking for a loss then is an InputError, as is cross-entropy on a 0-d output or a model without a
// floating output. Without `requested`, cross-entropy for 2-D outputs ([batch, classes]) and MSE
// otherwise.
std::optional<AttachedLoss> attach_loss(Graph& g, std::optional<LossKind> requested);

// "attached cross-entropy to output 'logits' [64, 10] (the labels are synthesised; choose with
// --loss)": what a command prints.
std::string describe(const AttachedLoss& a, const std::string& model);

}  // namespace unity
