#include "unity/use_cases/run_model.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/training_loss.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/scaled_zoo.h"

namespace unity::use_cases {

Graph build_run_model(const RunModel& r, std::string* loss_note) {
  const auto& scalable = zoo::scalable_models();
  const bool can_scale = std::find(scalable.begin(), scalable.end(), r.target) != scalable.end();
  if (!r.resize.empty() && r.scale != 1.0)
    throw InputError(
        "--scale shrinks the paper's models and --layers --hidden --heads --seq --vocab --ffn "
        "--kv-heads --head-dim --tie-embeddings resize the gpt and llama families: give one or "
        "the other");
  Graph model;
  if (!r.resize.empty()) {
    model = load_model_for_devices(r.target, r.devices, r.batch, r.resize);  // no family: throws
  } else if (zoo::has_model(r.target) && (r.scale != 1.0 || (r.batch > 0 && can_scale))) {
    // Scalable zoo models go through build_scaled even at scale 1 (the same graph), so that the
    // batch means the global batch for every zoo model.
    std::int64_t batch = r.batch;
    if (batch <= 0)
      for (const auto& m : zoo::models())
        if (m.name == r.target) batch = m.default_batch * r.devices;
    model = zoo::build_scaled(r.target, batch, r.scale);
  } else if (r.scale != 1.0) {
    throw InputError(fmt::format("--scale applies to zoo models; '{}' is not one", r.target));
  } else {
    model = load_model_for_devices(r.target, r.devices, r.batch, r.resize);
  }
  if (!r.attach_loss) return model;
  std::optional<LossKind> kind;
  if (!r.loss.empty()) kind = loss_kind_from_string(r.loss);
  if (const auto attached = attach_loss(model, kind))
    if (loss_note) *loss_note = describe(*attached, r.target);
  return model;
}

}  // namespace unity::use_cases
