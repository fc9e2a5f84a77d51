#include "unity/executor/training.h"

#include <chrono>

#include <fmt/format.h>

#include "engine.h"
#include "unity/executor/run_files.h"

namespace unity::executor {

double default_learning_rate(const std::string& optimizer) {
  if (optimizer == "adam") return 1e-3;
  if (optimizer == "sgd" || optimizer == "sgd-momentum") return 1e-2;
  throw InputError(
      fmt::format("unknown optimizer '{}' (expected sgd, sgd-momentum or adam)", optimizer));
}

TrainingResult train(const Program& program, const TrainingOptions& options, DeviceBackend& backend,
                     Communicator& comm) {
  using clock = std::chrono::steady_clock;
  if (options.iterations < 1) throw InputError("at least one iteration is needed");
  if (options.warmup < 0) throw InputError("warm-up iterations cannot be negative");
  detail::OptimizerConfig config;
  config.kind = options.optimizer;
  config.learning_rate = static_cast<float>(
      options.learning_rate > 0 ? options.learning_rate : default_learning_rate(options.optimizer));
  config.momentum = static_cast<float>(options.momentum);

  TrainingResult result;
  const auto setup_start = clock::now();
  if (options.monitor) options.monitor->at(-1, ProgressMonitor::Phase::Setup, -1);
  detail::SourceValues sources;
  sources.seed = options.seed;
  detail::Engine engine(program, backend, comm, sources, options.monitor, true);
  backend.synchronize();
  comm.barrier();
  result.setup_ms = std::chrono::duration<double, std::milli>(clock::now() - setup_start).count();
  result.device_bytes = engine.device_bytes();

  const int total = options.warmup + options.iterations;
  engine.set_profiling(options.profile);
  for (int it = 0; it < total; ++it) {
    if (options.profile && it == options.warmup) engine.reset_profile();
    if (options.monitor) options.monitor->at(it, ProgressMonitor::Phase::Forward, -1);
    if (options.before_phase) options.before_phase(it, ProgressMonitor::Phase::Forward);
    comm.barrier();
    const auto start = clock::now();
    engine.forward(it);
    if (options.monitor) options.monitor->at(it, ProgressMonitor::Phase::Backward, -1);
    if (options.before_phase) options.before_phase(it, ProgressMonitor::Phase::Backward);
    engine.backward(it);
    if (options.before_phase) options.before_phase(it, ProgressMonitor::Phase::GradientSync);
    engine.synchronize_gradients(it);
    engine.update(config, it + 1);
    backend.synchronize();
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (options.profile && it >= options.warmup) engine.close_profile_iteration();
    if (options.monitor) options.monitor->at(it, ProgressMonitor::Phase::Report, -1);
    const auto all = comm.all_gather_host({engine.local_loss(), ms});
    IterationReport report;
    report.index = it;
    report.warmup = it < options.warmup;
    for (std::size_t r = 0; r < all.size(); r += 2) {
      report.loss += all[r];
      report.milliseconds = std::max(report.milliseconds, all[r + 1]);
    }
    if (report.warmup) {
      result.warmup_losses.push_back(report.loss);
    } else {
      result.losses.push_back(report.loss);
      result.iteration_ms.push_back(report.milliseconds);
    }
    if (options.on_iteration) options.on_iteration(report);
  }
  if (options.profile) {
    // The slowest rank's median time per entry over the measured iterations.
    const auto mine = engine.profile_seconds();
    const auto all = comm.all_gather_host(mine);
    std::vector<double> worst(mine.size(), 0.0);
    for (std::size_t r = 0; r < all.size(); r += mine.size())
      for (std::size_t i = 0; i < mine.size(); ++i) worst[i] = std::max(worst[i], all[r + i]);
    const double per = 1e3;
    const auto& steps = engine.steps();
    double accounted = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Node& n = *steps[i].node;
      OperatorProfile p{n.id, n.op.name, std::string(to_string(n.op.type)), worst[2 * i] * per,
                        worst[2 * i + 1] * per};
      accounted += p.forward_ms + p.backward_ms;
      result.profile.push_back(std::move(p));
    }
    const std::size_t k = 2 * steps.size();
    result.profile.push_back({-1, "gradient all-reduce", "", 0, worst[k] * per});
    result.profile.push_back({-1, "optimizer update", "", 0, worst[k + 1] * per});
    accounted += (worst[k] + worst[k + 1]) * per;
    result.profile.push_back(
        {-1, "other", "", 0, std::max(0.0, median(result.iteration_ms) - accounted)});
  }
  if (options.collect_weights) result.weights = engine.gather_weights();
  return result;
}

std::map<TensorRef, HostTensor> evaluate(const Program& program,
                                         const std::map<NodeId, HostTensor>& sources,
                                         DeviceBackend& backend, Communicator& comm) {
  detail::SourceValues values;
  values.given = &sources;
  detail::Engine engine(program, backend, comm, values, nullptr, false);
  engine.forward(0);
  std::map<TensorRef, HostTensor> out;
  std::vector<TensorRef> sinks = program.losses;
  sinks.insert(sinks.end(), program.outputs.begin(), program.outputs.end());
  for (const auto& ref : sinks) {
    if (program.tensor(ref).origin != TensorOrigin::Placed) continue;
    HostTensor h = engine.gather_tensor(ref);
    if (comm.rank() == 0) out[ref] = std::move(h);
  }
  return out;
}

Gradients compute_gradients(const Program& program, const std::map<NodeId, HostTensor>& sources,
                            DeviceBackend& backend, Communicator& comm) {
  detail::SourceValues values;
  values.given = &sources;
  detail::Engine engine(program, backend, comm, values, nullptr, true);
  engine.forward(0);
  engine.backward(0);
  engine.synchronize_gradients(0);
  Gradients g;
  for (double v : comm.all_gather_host({engine.local_loss()})) g.loss += v;
  g.weights = engine.gather_weights(true);
  return g;
}

}  // namespace unity::executor
