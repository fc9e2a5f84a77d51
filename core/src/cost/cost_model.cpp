#include "unity/core/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "unity/core/cost/op_profile_key.h"
#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(Optimizer o) {
  switch (o) {
    case Optimizer::SGDMomentum:
      return "sgd-momentum";
    case Optimizer::Adam:
      return "adam";
    default:
      return "sgd";
  }
}

Optimizer optimizer_from_string(std::string_view name) {
  for (auto o : {Optimizer::SGD, Optimizer::SGDMomentum, Optimizer::Adam})
    if (to_string(o) == name) return o;
  throw InputError(
      fmt::format("unknown optimizer '{}' (expected sgd, sgd-momentum or adam)", name));
}

int optimizer_state_copies(Optimizer o) {
  switch (o) {
    case Optimizer::SGDMomentum:
      return 1;
    case Optimizer::Adam:
      return 2;
    default:
      return 0;
  }
}

double gradient_bytes(DataType weight_dtype) {
  return weight_dtype == DataType::BFloat16 ? 4.0 : static_cast<double>(size_of(weight_dtype));
}

double gemm_wave_efficiency(double m, double n, double count, int sms) {
  if (sms <= 0 || m <= 0 || n <= 0 || count <= 0) return 1;
  double best = 0;
  for (const auto& [tm, tn] :
       {std::pair{128.0, 256.0}, std::pair{256.0, 128.0}, std::pair{128.0, 128.0}}) {
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * count;
    const double waves = std::ceil(tiles / sms);
    best = std::max(best, m * n * count / (waves * sms * tm * tn));
  }
  return best;
}

namespace {

// A measured curve's value at x, interpolated on log x between its points (ascending), its end
// points' beyond them.
double on_log_scale(const std::vector<std::pair<double, double>>& r, double x) {
  if (x <= r.front().first) return r.front().second;
  if (x >= r.back().first) return r.back().second;
  std::size_t i = 1;
  while (r[i].first < x) ++i;
  const double x0 = std::log(r[i - 1].first), x1 = std::log(r[i].first);
  const double t = x1 > x0 ? (std::log(x) - x0) / (x1 - x0) : 1.0;
  return r[i - 1].second + t * (r[i].second - r[i - 1].second);
}

}  // namespace

double gemm_rate(const DeviceSpec& device, double flops) {
  if (device.gemm_rates.empty()) return device.peak_flops_fp32 * device.compute_efficiency;
  return on_log_scale(device.gemm_rates, flops);
}

CostModel::CostModel(const MachineSpec& machine, Optimizer optimizer,
                     std::shared_ptr<const ProfileSource> profiles)
    : machine_(machine), optimizer_(optimizer), profiles_(std::move(profiles)) {}

OpTimes CostModel::task_times(const Graph& graph, NodeId node, const DeviceSpec& device) const {
  if (profiles_)
    if (auto measured = profiles_->lookup(graph, node, device)) return *measured;
  const TaskWork w = task_work(graph, node, device.fused_attention);
  if (w.flops == 0 && w.bytes == 0 && w.serial_bytes == 0 && w.transcendentals == 0 && w.erfs == 0)
    return {};
  const Node& n = graph.node(node);
  const double peak = device.peak_flops(n.outputs.empty() ? DataType::Float32 : n.outputs[0].dtype);
  // FP8 GEMMs at the device's fp8 peak, with their casts as kernels of their own.
  const bool fp8 = runs_fp8_gemms(n, device);
  const double fp8_peak = fp8 ? device.peak_flops_fp8 : peak;
  const double fp8_flops = fp8 ? w.fp8_flops : 0.0;
  double compute = (w.flops - fp8_flops) / (peak * device.compute_efficiency) +
                   fp8_flops / (fp8_peak * device.fp8_efficiency());
  // A product whose last wave of tiles leaves SMs idle takes as long as whole waves.
  if (device.sm_count > 0)
    for (int i = 0; i < w.gemm_count; ++i) {
      const GemmShape& g = w.gemms[static_cast<std::size_t>(i)];
      const double efficiency = gemm_wave_efficiency(g.m, g.n, g.count, device.sm_count);
      const double rate =
          fp8 && g.fp8 ? fp8_peak * device.fp8_efficiency() : peak * device.compute_efficiency;
      compute += g.flops / rate * (1 / efficiency - 1);
    }
  // Measured rates by size (a CPU's): each product at its own rate instead of the peak's.
  if (!device.gemm_rates.empty() && !fp8)
    for (int i = 0; i < w.gemm_count; ++i) {
      const GemmShape& g = w.gemms[static_cast<std::size_t>(i)];
      const double per_product = g.flops / std::max(1.0, g.products > 0 ? g.products : g.count);
      compute +=
          g.flops / gemm_rate(device, per_product) - g.flops / (peak * device.compute_efficiency);
    }
  // A depthwise convolution on a device that runs it as rows of multiply-adds, at their rate.
  if (device.depthwise_mac_seconds > 0 && w.depthwise_macs > 0)
    compute = w.depthwise_macs * device.depthwise_mac_seconds;
  const double memory = w.bytes / (device.memory_bandwidth * device.memory_efficiency);
  const double serial =
      (w.serial_bytes + (fp8 ? w.fp8_cast_bytes : 0.0) +
       (device.lowers_convolutions_through_memory ? w.conv_lowering_bytes : 0.0)) /
      (device.memory_bandwidth * device.memory_efficiency);
  const double transcendental =
      w.transcendentals * device.transcendental_seconds + w.erfs * device.erf_time();
  const double forward =
      std::max(compute, memory) + serial + transcendental + device.launch_latency * w.launches;
  const double ratio = backward_ratio(graph, node, w, device);
  const double backward = w.backward_transcendentals < 0
                              ? forward * ratio
                              : (forward - transcendental) * ratio +
                                    w.backward_transcendentals * device.transcendental_seconds +
                                    w.backward_erfs * device.erf_time();
  // A fused attention kernel's products at its own measured rates, not a GEMM's.
  if (w.fused_products && device.fused_attention_forward_efficiency > 0 &&
      device.fused_attention_backward_efficiency > 0) {
    const double gemm = 1 / (peak * device.compute_efficiency);
    return {
        forward + w.product_flops * (1 / (peak * device.fused_attention_forward_efficiency) - gemm),
        backward + w.product_backward_flops *
                       (1 / (peak * device.fused_attention_backward_efficiency) - gemm)};
  }
  return {forward, backward};
}

double CostModel::backward_ratio(const Graph& graph, NodeId node, const TaskWork& w,
                                 const DeviceSpec& device) {
  if (!device.skips_data_gradients) return w.backward_ratio;
  const Node& n = graph.node(node);
  switch (n.op.type) {
    case OpType::Linear:
    case OpType::MatMul:
    case OpType::BatchMatMul:
    case OpType::Conv2D:
    case OpType::ConvTranspose: {
      // One product per operand whose gradient is computed: the input's (x) and the weight's (or
      // the second operand's); a bias's gradient is a sum, not a product.
      int products = 0;
      for (std::size_t i = 0; i < std::min<std::size_t>(2, n.inputs.size()); ++i)
        if (needs_gradient(graph, n.inputs[i])) ++products;
      return w.backward_ratio * products / 2.0;
    }
    default:
      return w.backward_ratio;
  }
}

double CostModel::update_time(double weight_bytes, const DeviceSpec& device) const {
  if (weight_bytes <= 0) return 0;
  // Read weight and gradient, write weight, plus read and write each optimizer state; and the
  // gradient is cleared for the next iteration's accumulation (one more write).
  const double traffic = weight_bytes * (4.0 + 2.0 * optimizer_state_copies(optimizer_));
  const double streamed = traffic / (device.memory_bandwidth * device.memory_efficiency);
  const auto rates = device.update_rates.find(std::string(to_string(optimizer_)));
  if (rates == device.update_rates.end() || rates->second.empty())
    return streamed + device.launch_latency;
  // Measured by size (the executor's fp32 update): from the caches below the largest size
  // measured, at least the streamed traffic beyond it.
  const auto& curve = rates->second;
  const double parameters = weight_bytes / 4.0;
  const double measured = parameters * on_log_scale(curve, parameters);
  return (parameters > curve.back().first ? std::max(measured, streamed) : measured) +
         device.launch_latency;
}

double CostModel::transfers_time(const std::vector<Transfer>& transfers) const {
  // Seconds each destination spends receiving, summed per destination (few transfers: a sorted
  // vector beats a map here, and this runs for every edge the mapping search prices).
  std::vector<std::pair<int, double>> per_destination;
  per_destination.reserve(transfers.size());
  double latency = 0;
  for (const auto& t : transfers) {
    if (t.src == t.dst || t.bytes <= 0) continue;
    const auto& link = machine_.link(t.src, t.dst);
    per_destination.emplace_back(t.dst, t.bytes / link.bandwidth);
    latency = std::max(latency, link.latency);
  }
  std::sort(per_destination.begin(), per_destination.end());
  double slowest = 0;
  for (std::size_t i = 0; i < per_destination.size();) {
    double sum = 0;
    const int dst = per_destination[i].first;
    for (; i < per_destination.size() && per_destination[i].first == dst; ++i)
      sum += per_destination[i].second;
    slowest = std::max(slowest, sum);
  }
  return slowest > 0 ? slowest + latency : 0;
}

double CostModel::allreduce_bytes(int group_size, double bytes) {
  if (group_size <= 1) return 0;
  return 2.0 * (group_size - 1) * bytes;  // k devices each send 2(k-1)/k * bytes
}

double CostModel::allreduce_time(const std::vector<int>& group, double bytes) const {
  const int k = static_cast<int>(group.size());
  if (k <= 1 || bytes <= 0) return 0;
  // A ring visits the devices in order; its slowest hop bounds every step.
  std::vector<int> order = group;
  std::sort(order.begin(), order.end());
  // A collective runs on every group of its kind at once (each pipeline rank's data-parallel
  // group, each replica's tensor-parallel group), so a pod's uplinks, oversubscribed so that each
  // of its devices gets inter_pod.bandwidth when all send across, are shared by the rings that
  // leave it: one hop per group, and a group with g devices in the pod shares the pod with
  // pod_size / g groups. Its crossing hop gets g x inter_pod.bandwidth, up to a device's own link.
  std::map<int, int> in_pod;
  if (machine_.pods() > 1)
    for (int d : order) ++in_pod[machine_.pod_of(d)];
  double bandwidth = 0, latency = 0;
  for (int i = 0; i < k; ++i) {
    const int a = order[i], b = order[(i + 1) % k];
    if (a == b) continue;
    const auto& link = machine_.link(a, b);
    double hop = link.bandwidth;
    if (machine_.pods() > 1 && machine_.pod_of(a) != machine_.pod_of(b))
      hop = std::min(machine_.inter_node.bandwidth, in_pod[machine_.pod_of(a)] * link.bandwidth);
    bandwidth = bandwidth == 0 ? hop : std::min(bandwidth, hop);
    latency = std::max(latency, link.latency);
  }
  if (bandwidth == 0) return 0;
  // A ring is bandwidth-optimal but pays 2(k-1) latencies; a pipelined double binary tree (what
  // NCCL switches to at scale) moves each byte up and down once but pays only 2 log2(k) latencies.
  // Both send 2(k-1) times the buffer in all; the library picks the faster.
  const double ring = 2.0 * (k - 1) * (bytes / k / bandwidth + latency);
  const double tree = 2.0 * std::ceil(std::log2(k)) * latency + 2.0 * bytes / bandwidth;
  return std::min(ring, tree);
}

}  // namespace unity
