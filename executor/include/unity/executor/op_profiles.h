#pragma once
// Measured operator times for the cost model (its ProfileSource): what the paper's cost model does
// ("measures each operator's execution time on the device"). The analytic roofline has one GEMM
// rate per device, but OpenBLAS is several times slower on the transposed, thin backward products
// of a batch-64 layer than on its forward product, and a first layer computes no input gradient; a
// measured profile has both right.
//
// Each distinct operator task (its op_profile_key: type, attributes, piece shapes, which inputs
// need gradients) is measured once, on first lookup, by running the operator alone on this process
// (forward and backward, median of repeats), scaled by the calibration's concurrency factor (one
// rank's speed when all ranks run at once, from `unity calibrate --ranks N`), and kept in a JSON
// file so later lookups are free. Parallel operators are not measured: their communication stays
// analytic.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "unity/core/cost/cost_model.h"
#include "unity/core/mapping/machine_view.h"

namespace unity::executor {

// Forward and backward seconds of one task of `node`, run alone on this process (the CPU backend,
// one thread). Throws for parallel operators and sources.
OpTimes measure_operator(const Graph& graph, NodeId node, double seconds = 0.05);

class MeasuredProfiles final : public ProfileSource {
 public:
  // `slowdown`: how much slower a rank runs when every rank of the run computes at once (>= 1).
  explicit MeasuredProfiles(double slowdown = 1.0) : slowdown_(slowdown) {}
  // Loads a profile file (missing: starts empty); throws InputError for a malformed one.
  static std::shared_ptr<MeasuredProfiles> load(const std::filesystem::path& path);
  void save(const std::filesystem::path& path) const;

  std::optional<OpTimes> lookup(const Graph& graph, NodeId node,
                                const DeviceSpec& device) const override;

  double slowdown() const { return slowdown_; }
  std::size_t size() const;
  std::size_t measured_now() const { return measured_now_; }  // lookups that had to measure

 private:
  double slowdown_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, OpTimes> times_;  // unscaled: one process alone
  mutable std::size_t measured_now_ = 0;
};

}  // namespace unity::executor

namespace unity::executor {

// The cost model's iteration time (ms) for a PCG and its views on `machine`, with `profiles`
// overriding operator times where given: the prediction `unity run --machine` prints. Operators run
// one after another, as the executor runs them.
double predicted_iteration_ms(const Graph& pcg, const std::map<NodeId, MachineView>& views,
                              const MachineSpec& machine, const std::string& optimizer,
                              std::shared_ptr<const ProfileSource> profiles);

// The profile file that belongs to a calibrated machine file: "x.json" -> "x.profiles.json".
std::filesystem::path profiles_path_for(const std::filesystem::path& machine_file);

}  // namespace unity::executor
