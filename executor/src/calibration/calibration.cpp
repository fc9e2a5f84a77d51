#include "unity/executor/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <random>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"

namespace unity::executor {
namespace {

using clock_type = std::chrono::steady_clock;

// Runs `f` repeatedly for about `seconds` on every rank at once; the median time of one call, the
// slowest rank's. Calls are timed in batches of at least kBatchSeconds: with more ranks than cores
// the scheduler gives each rank whole time slices (milliseconds), so a single short call often runs
// undisturbed and its median would hide the sharing that a training run does see.
constexpr double kBatchSeconds = 0.02;

// Seconds this thread has run on a core.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
}

// `count` floats on the device, each `value`.
float* filled(DeviceBackend& be, i64 count, float value) {
  float* p = static_cast<float*>(be.allocate(static_cast<std::size_t>(count) * 4));
  be.fill(p, value, count);
  return p;
}

// `quick` (the probe of use_cases/cpu_probe.h): no more ranks than cores, one BLAS thread each, so
// no rank waits for a time slice of its own peers. It times 2 ms batches in the CPU time of the
// rank's thread: the time other processes held its core (a compiler beside the first plan) is
// left out, where wall time kept a probe taken beside a compiler at half speed for every later
// plan; what slows the core while it runs (a busy sibling, shared caches) stays in, as a run
// sees it.
constexpr double kQuickBatchSeconds = 0.002;

template <typename F>
double measure(Communicator& comm, DeviceBackend& be, double seconds, bool quick, F f) {
  double (*now)() = quick ? thread_cpu_seconds : wall_seconds;
  f();  // warm caches and allocations
  be.synchronize();
  const double t_first = now();
  f();
  be.synchronize();
  const double first = now() - t_first;
  const double batch = quick ? kQuickBatchSeconds : kBatchSeconds;
  const int per_batch = std::clamp(static_cast<int>(batch / std::max(first, 1e-7)), 1, 100000);
  std::vector<double> times;
  const auto start = clock_type::now();
  while (times.size() < 3 ||
         std::chrono::duration<double>(clock_type::now() - start).count() < seconds) {
    const double t0 = now();
    for (int i = 0; i < per_batch; ++i) f();
    be.synchronize();
    times.push_back((now() - t0) / per_batch);
    if (times.size() >= 1000) break;
  }
  double slowest = 0;
  for (double t : comm.all_gather_host({median(times)})) slowest = std::max(slowest, t);
  return slowest;
}

// For collectives: the loop count must match on every rank, so it is fixed from a first timing.
template <typename F>
double measure_collective(Communicator& comm, DeviceBackend& be, double seconds, F f) {
  comm.barrier();
  const auto t0 = clock_type::now();
  f();
  be.synchronize();
  double first = std::chrono::duration<double>(clock_type::now() - t0).count();
  for (double t : comm.all_gather_host({first})) first = std::max(first, t);
  const int reps = std::clamp(static_cast<int>(seconds / std::max(first, 1e-7)), 5, 2000);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    comm.barrier();
    const auto s = clock_type::now();
    f();
    be.synchronize();
    times.push_back(std::chrono::duration<double>(clock_type::now() - s).count());
  }
  double slowest = 0;
  for (double t : comm.all_gather_host({median(times)})) slowest = std::max(slowest, t);
  return slowest;
}

// A chain of tiny operators trained on this rank alone: the executor's time per task beyond its
// kernels (the cost model's launch latency).
double operator_overhead(double seconds) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.weight("x", {1, 16});
  constexpr int kOps = 64;
  for (int i = 0; i < kOps; ++i)
    x = b.op(OpType::ScalarMul, {{"scalar", 1.0}}, {x}, "op" + std::to_string(i));
  b.mse_loss(x, b.input("target", {1, 16}), "loss");
  const Program p = lower_plan(g, single_device_views(g), 1);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  TrainingOptions o;
  o.iterations = std::clamp(static_cast<int>(seconds / 20e-6), 50, 5000);
  o.warmup = 5;
  const TrainingResult r = train(p, o, *backend, *comm);
  // Forward and backward of each operator, plus the loss and the update.
  return median(r.iteration_ms) * 1e-3 / (2.0 * (kOps + 1) + 1);
}

}  // namespace

Calibration calibrate(DeviceBackend& be, Communicator& comm, const CalibrationOptions& options) {
  Calibration c;
  c.backend = be.name();
  c.ranks = comm.size();
  const double s = options.seconds;

  // GEMMs of a training step's Linear layers (forward, and the two backward products), at the sizes
  // the CPU runs use: the median rate over the shapes. Quick: without the largest, which takes
  // most of the time (1.6 GFLOP a step).
  std::vector<std::array<i64, 3>> shapes = {{64, 784, 512}, {64, 1024, 1024}, {64, 512, 10}};
  if (!options.quick) shapes.insert(shapes.begin() + 2, {256, 1024, 1024});
  // The rate by size (Calibration::gemm_rates): these and three small products (a 64-wide
  // transformer's, and one head's scores over 32 tokens, whose time is mostly the call's own),
  // not in the median; the thin 64 x 512 x 10 is not on the ladder (its rate is its shape's, not
  // its size's).
  const std::size_t in_median = shapes.size();
  shapes.push_back({32, 16, 32});
  shapes.push_back({32, 64, 64});
  shapes.push_back({64, 256, 256});
  // The quick probe measures the ladder twice, a pass apart, and keeps each shape's faster rate:
  // another process or VM slowing the cores for a moment (the two large shapes at half their rate
  // in a probe here, the next one at full) would otherwise stay in the kept figures, and plans
  // made with them.
  const int passes = options.quick ? 2 : 1;
  std::vector<double> best(shapes.size(), 0.0), solos(shapes.size(), 0.0);
  for (int pass = 0; pass < passes; ++pass)
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto [m, k, n] = shapes[i];
      float* a = filled(be, m * k, 0.5f);
      float* w = filled(be, k * n, 0.25f);
      float* y = filled(be, m * n, 0.0f);
      float* da = filled(be, m * k, 0.0f);
      float* dw = filled(be, k * n, 0.0f);
      const double t = measure(comm, be, s, options.quick, [&] {
        be.gemm(false, false, m, n, k, 1.0f, a, k, w, n, 0.0f, y, n);  // y = x w
        be.gemm(false, true, m, k, n, 1.0f, y, n, w, n, 0.0f, da, k);  // dx = dy w^T
        be.gemm(true, false, k, n, m, 1.0f, a, k, y, n, 0.0f, dw, n);  // dw = x^T dy
      });
      best[i] = std::max(best[i], 6.0 * static_cast<double>(m * k * n) / t);
      // Rank 0 alone, the others waiting (quick: not measured).
      if (i < in_median && !options.quick) {
        double solo = 0;
        if (comm.rank() == 0) {
          std::vector<double> times;
          const auto start = clock_type::now();
          while (times.size() < 3 ||
                 std::chrono::duration<double>(clock_type::now() - start).count() < s) {
            const auto t0 = clock_type::now();
            be.gemm(false, false, m, n, k, 1.0f, a, k, w, n, 0.0f, y, n);
            be.gemm(false, true, m, k, n, 1.0f, y, n, w, n, 0.0f, da, k);
            be.gemm(true, false, k, n, m, 1.0f, a, k, y, n, 0.0f, dw, n);
            be.synchronize();
            times.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
          }
          solo = 6.0 * static_cast<double>(m * k * n) / median(times);
        }
        solos[i] = comm.all_gather_host({solo})[0];
      }
      for (float* p : {a, w, y, da, dw}) be.release(p);
    }
  std::vector<double> rates, solo_rates;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto [m, k, n] = shapes[i];
    const double rate = best[i];
    c.details.push_back({fmt::format("gemm_{}x{}x{}_flops", m, k, n), rate});
    if (n > 10) c.gemm_rates.push_back({2.0 * static_cast<double>(m * k * n), rate});
    if (i >= in_median) continue;
    rates.push_back(rate);
    if (!options.quick)
      c.details.push_back({fmt::format("gemm_{}x{}x{}_flops_alone", m, k, n), solos[i]});
    solo_rates.push_back(options.quick ? rate : solos[i]);
  }
  c.gemm_flops = median(rates);
  std::sort(c.gemm_rates.begin(), c.gemm_rates.end());
  c.solo_gemm_flops = comm.size() > 1 ? median(solo_rates) : c.gemm_flops;

  // Streaming: y += x over 2 x 64 MiB, far beyond the caches (read x, read and write y).
  {
    const i64 n = i64{16} << 20;
    float* x = static_cast<float*>(be.allocate(static_cast<std::size_t>(n) * 4));
    float* y = static_cast<float*>(be.allocate(static_cast<std::size_t>(n) * 4));
    const double t = measure(comm, be, s, options.quick, [&] { be.axpy(1.0f, x, y, n); });
    c.memory_bandwidth = 12.0 * static_cast<double>(n) / t;
    c.details.push_back({"stream_bytes_per_second", c.memory_bandwidth});
    be.release(x);
    be.release(y);
  }

  // A transcendental function per element, on 64 KiB that stay in cache: what element-wise
  // operators cost beyond their memory traffic. Two kinds, as the cost model charges them: a
  // sigmoid's exp (sigmoid, SiLU, softmax, the loss) and GELU's erf, which takes several times as
  // long. The values are spread as a layer's pre-activations are (normal, mean 0, deviation 1):
  // erf takes other paths by magnitude, and on one repeated value its branches are always
  // predicted (0.5 everywhere measured 3.7 ns a value here, where these take 5.5).
  {
    const i64 n = i64{1} << 14;
    float* x = static_cast<float*>(be.allocate(static_cast<std::size_t>(n) * 4));
    float* y = static_cast<float*>(be.allocate(static_cast<std::size_t>(n) * 4));
    std::mt19937 random(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& v : values) v = normal(random);
    be.to_device(x, values.data(), values.size() * sizeof(float));
    const auto per_value = [&](UnaryKind kind) {
      return measure(comm, be, s, options.quick, [&] { be.unary(kind, 0.0f, x, y, n); }) /
             static_cast<double>(n);
    };
    c.transcendental_seconds = per_value(UnaryKind::Sigmoid);
    c.details.push_back({"sigmoid_seconds_per_element", c.transcendental_seconds});
    c.erf_seconds = per_value(UnaryKind::Gelu);
    c.details.push_back({"gelu_seconds_per_element", c.erf_seconds});
    be.release(x);
    be.release(y);
  }

  // A depthwise convolution's multiply-adds (MobileNet's and EfficientNet's), which the executor
  // runs directly, row by row, at a rate of their own: short rows, neither a GEMM's nor a stream's.
  {
    ConvSpec d;
    d.c = d.o = d.groups = 32;
    d.h = d.w = d.oh = d.ow = 28;
    d.kh = d.kw = 3;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
    const i64 in = d.c * d.h * d.w, taps = d.kh * d.kw;
    float* x = filled(be, in, 0.5f);
    float* w = filled(be, d.c * taps, 0.25f);
    float* y = filled(be, in, 0.0f);
    c.depthwise_mac_seconds = measure(comm, be, s, options.quick, [&] { be.conv2d(d, x, w, y); }) /
                              static_cast<double>(in * taps);
    c.details.push_back({"depthwise_seconds_per_mac", c.depthwise_mac_seconds});
    for (float* p : {x, w, y}) be.release(p);
  }

  // The optimizer's update per parameter, each kind the executor runs, on 64 Ki parameters (a
  // small model's, in a core's cache) and 2 Mi (beyond it): small models update from the caches
  // several times faster than streaming, and Adam's square root and division can bound it
  // instead of its bytes.
  for (const i64 n : {i64{1} << 16, i64{1} << 21}) {
    std::vector<float*> arrays;
    for (int a = 0; a < 4; ++a) {
      arrays.push_back(static_cast<float*>(be.allocate(static_cast<std::size_t>(n) * 4)));
      be.fill(arrays.back(), a == 1 ? 1e-3f : 0.5f, n);
    }
    float *w = arrays[0], *g = arrays[1], *m = arrays[2], *v = arrays[3];
    const std::pair<Optimizer, std::function<void()>> updates[] = {
        {Optimizer::SGD, [&] { be.sgd(w, g, 1e-6f, n); }},
        {Optimizer::SGDMomentum, [&] { be.sgd_momentum(w, g, m, 1e-6f, 0.9f, n); }},
        {Optimizer::Adam, [&] { be.adam(w, g, m, v, 1e-6f, 0.9f, 0.999f, 1e-8f, 0.5f, 0.5f, n); }}};
    for (const auto& [optimizer, update] : updates) {
      const std::string name(to_string(optimizer));
      const double t = measure(comm, be, s, options.quick, update) / static_cast<double>(n);
      c.update_rates[name].push_back({static_cast<double>(n), t});
      c.details.push_back({fmt::format("{}_update_seconds_per_parameter_{}", name, n), t});
    }
    for (float* a : arrays) be.release(a);
  }

  // Per-operator overhead, on every rank at once as in a run.
  {
    double overhead = operator_overhead(s);
    for (double o : comm.all_gather_host({overhead})) overhead = std::max(overhead, o);
    c.launch_latency = overhead;
    c.details.push_back({"operator_overhead_seconds", overhead});
  }

  // Between ranks: all-reduces over every rank, small (latency) and large (bandwidth), in the cost
  // model's terms: small = 2 ceil(log2 k) latencies (tree), large = 2 (k-1) (bytes/k/bw + latency).
  // The bandwidth depends on whether the buffers stay in cache, so it is measured at the gradient
  // sizes CPU runs hold (256 KiB to 4 MiB) and the median kept.
  if (comm.size() >= 2) {
    const int k = comm.size();
    std::vector<int> all;
    for (int r = 0; r < k; ++r) all.push_back(r);
    comm.prepare_groups({all});
    const i64 largest = i64{1} << 20;
    // A run syncs every gradient of the model one after another, so a large gradient has left the
    // cache by its turn: each size cycles through 8 buffers.
    constexpr int kBuffers = 8;
    std::vector<float*> buffers;
    for (int i = 0; i < kBuffers; ++i) {
      buffers.push_back(static_cast<float*>(be.allocate(static_cast<std::size_t>(largest) * 4)));
      be.fill(buffers.back(), 1.0f, largest);
    }
    const double t_small =
        measure_collective(comm, be, s, [&] { comm.all_reduce(all, buffers[0], 1); });
    const double steps = 2.0 * std::ceil(std::log2(static_cast<double>(k)));
    c.link_latency = t_small / steps;
    c.details.push_back({"allreduce_4_bytes_seconds", t_small});
    std::vector<double> bandwidths;
    // Quick: 256 KiB, 1 MiB and 4 MiB.
    for (i64 count = i64{1} << 16; count <= largest; count *= options.quick ? 4 : 2) {
      int next = 0;
      const double t = measure_collective(comm, be, s / 2, [&] {
        comm.all_reduce(all, buffers[next], count);
        next = (next + 1) % kBuffers;
      });
      const double ring_bytes = 2.0 * (k - 1) * 4.0 * static_cast<double>(count) / k;
      bandwidths.push_back(ring_bytes / std::max(t - 2.0 * (k - 1) * c.link_latency, t * 0.5));
      c.details.push_back({fmt::format("allreduce_{}_KiB_seconds", count * 4 / 1024), t});
    }
    for (float* b : buffers) be.release(b);
    c.link_bandwidth = median(bandwidths);
    c.links_measured = true;
  }
  return c;
}

nlohmann::json calibration_to_json(const Calibration& c) {
  nlohmann::json details = nlohmann::json::object();
  for (const auto& [k, v] : c.details) details[k] = v;
  return {{"backend", c.backend},
          {"ranks", c.ranks},
          {"gemm_flops", c.gemm_flops},
          {"solo_gemm_flops", c.solo_gemm_flops},
          {"slowdown", c.slowdown()},
          {"memory_bandwidth", c.memory_bandwidth},
          {"launch_latency", c.launch_latency},
          {"transcendental_seconds", c.transcendental_seconds},
          {"erf_seconds", c.erf_seconds},
          {"depthwise_mac_seconds", c.depthwise_mac_seconds},
          {"gemm_rates", c.gemm_rates},
          {"update_rates", c.update_rates},
          {"links_measured", c.links_measured},
          {"link_bandwidth", c.link_bandwidth},
          {"link_latency", c.link_latency},
          {"details", details}};
}

Calibration calibration_from_json(const nlohmann::json& j) {
  Calibration c;
  try {
    c.backend = j.at("backend").get<std::string>();
    c.ranks = j.at("ranks").get<int>();
    c.gemm_flops = j.at("gemm_flops").get<double>();
    c.solo_gemm_flops = j.at("solo_gemm_flops").get<double>();
    c.memory_bandwidth = j.at("memory_bandwidth").get<double>();
    c.launch_latency = j.at("launch_latency").get<double>();
    c.transcendental_seconds = j.value("transcendental_seconds", 0.0);  // older files: none
    c.erf_seconds = j.value("erf_seconds", 0.0);  // older files: none (a GELU's in the above)
    c.depthwise_mac_seconds = j.value("depthwise_mac_seconds", 0.0);  // older files: none
    if (j.contains("gemm_rates"))
      c.gemm_rates = j.at("gemm_rates").get<std::vector<std::pair<double, double>>>();
    if (j.contains("update_rates"))  // older files: none
      c.update_rates =
          j.at("update_rates").get<std::map<std::string, std::vector<std::pair<double, double>>>>();
    c.links_measured = j.at("links_measured").get<bool>();
    c.link_bandwidth = j.at("link_bandwidth").get<double>();
    c.link_latency = j.at("link_latency").get<double>();
    for (const auto& [k, v] : j.at("details").items()) c.details.push_back({k, v.get<double>()});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("calibration is malformed: {}", e.what()));
  }
  return c;
}

MachineSpec calibrated_machine(const Calibration& c) {
  MachineSpec m = load_machine("cpu-local", {0, c.ranks});
  m.name = fmt::format("cpu-local-calibrated-{}", c.ranks);
  m.description =
      fmt::format("This machine's CPU cores as {} MPI rank{}, measured by `unity calibrate`",
                  c.ranks, c.ranks == 1 ? "" : "s");
  m.source =
      "unity calibrate: GEMM, streaming and per-operator measurements with every rank running at "
      "once";
  m.max_nodes = 1;
  m.num_nodes = 1;
  for (auto& d : m.device_types) {
    // d.name stays cpu-local's: the same device type (this computer's core) with measured
    // figures, so operator times measured on a plan for either machine are found under one name.
    d.peak_flops_fp32 = c.gemm_flops;
    d.peak_flops_fp16 = c.gemm_flops;
    d.memory_bandwidth = c.memory_bandwidth;
    d.compute_efficiency = 1.0;
    d.memory_efficiency = 1.0;
    d.launch_latency = c.launch_latency;
    // Measured on Unity's executor, which computes no gradient for the data (a first layer's
    // backward is its weight gradient alone).
    d.skips_data_gradients = true;
    // Its convolutions run im2col and a GEMM over the columns (cpu_conv_pool.cpp).
    d.lowers_convolutions_through_memory = true;
    d.transcendental_seconds = c.transcendental_seconds;
    d.erf_seconds = c.erf_seconds;
    d.depthwise_mac_seconds = c.depthwise_mac_seconds;
    d.gemm_rates = c.gemm_rates;
    d.update_rates = c.update_rates;
  }
  if (c.links_measured) {
    m.intra_island.name = "MPI (measured)";
    m.intra_island.bandwidth = c.link_bandwidth;
    m.intra_island.latency = c.link_latency;
    m.inter_island = m.intra_island;
  }
  validate_machine(m);
  return m;
}

}  // namespace unity::executor
