#include "unity/executor/pipeline_training.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "pipeline_run.h"
#include "unity/core/pipeline/context_parallel_plan.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/run_files.h"

namespace unity::executor {

void check_pipeline_run(const Plan& plan, int ranks) {
  if (!plan.pipeline) throw LoweringError("the plan is not pipelined");
  const PipelinePlan& p = *plan.pipeline;
  const int replica = p.grid().replica();
  const int devices = p.pipeline_stages * p.data_parallel * replica;
  if (ranks != devices)
    throw LoweringError(fmt::format(
        "the pipelined plan needs one rank per device: {} stages x {} copies x {} devices a "
        "replica{} = {} ranks, not {}",
        p.pipeline_stages, p.data_parallel, replica,
        p.context_parallel > 1 ? fmt::format(" ({} tensor-parallel x {} sequence shards)",
                                             p.tensor_parallel, p.context_parallel)
                               : "",
        devices, ranks));
  if (p.context_parallel > 1)
    for (const auto& [id, n] : plan.pcg.nodes())
      if (n.op.type == OpType::LatentAttention)
        throw LoweringError(fmt::format(
            "{} compresses the keys and values of the whole sequence, which the executor does "
            "not split by sequence: plan it with --cp 1 to run it here (the plan splits each "
            "sequence over {} devices)",
            plan.pcg.describe(id), p.context_parallel));
  if (p.tensor_parallel > 1 && p.kind_plans.empty())
    throw LoweringError(
        "the plan has no segment plans for its tensor-parallel stages (made by an older Unity): "
        "plan it again");
  if (static_cast<int>(p.chunks.size()) != p.pipeline_stages * p.interleave)
    throw LoweringError(fmt::format("the plan's pipeline has {} chunks, not {} stages x {}",
                                    p.chunks.size(), p.pipeline_stages, p.interleave));
  if (p.micro_batches * p.micro_batch_size * p.data_parallel != plan.pcg.batch_size)
    throw LoweringError(fmt::format(
        "the plan's {} micro-batches of {} samples x {} copies do not make its batch of {}",
        p.micro_batches, p.micro_batch_size, p.data_parallel, plan.pcg.batch_size));
  // Statistics over the batch are the whole batch's only where nothing splits it.
  if (p.micro_batches * p.data_parallel > 1)
    for (const auto& [id, n] : plan.pcg.nodes())
      if (n.op.type == OpType::BatchNorm)
        throw LoweringError(fmt::format(
            "{} normalises over the batch, which this plan splits into {} micro-batches x {} "
            "data-parallel copies; plan it again (the planner keeps such a batch whole)",
            plan.pcg.describe(id), p.micro_batches, p.data_parallel));
}

Graph pipeline_model(const Plan& plan) { return executed_graph(plan.pcg); }

PipelinePosition pipeline_position(const PipelinePlan& p, int rank) {
  const GridPosition at = p.grid().position(rank);
  return {at.stage, at.copy};
}

namespace {

using clock = std::chrono::steady_clock;
using detail::Iteration;
using detail::PipelineRank;
using detail::PipelineRun;
using detail::Slot;

std::map<std::string, HostTensor> collect_weights(PipelineRank& r, DeviceBackend& be,
                                                  Communicator& comm) {
  std::map<std::string, HostTensor> mine;
  for (auto& c : r.local)
    for (auto& piece : c.pieces)
      for (auto& [name, t] : piece.engines[0]->gather_weights()) mine[name] = std::move(t);
  std::vector<Communicator::Message> sends, receives;
  std::vector<void*> temporary;
  std::vector<std::pair<const std::string*, void*>> received;
  for (const auto& chunk : r.chunks)
    for (const auto& [name, sizes] : chunk.weights) {
      std::int64_t elements = 1;
      for (auto d : sizes) elements *= d;
      const std::size_t bytes = static_cast<std::size_t>(elements) * 4;
      if (chunk.owner == r.rank && r.rank != 0) {
        temporary.push_back(be.allocate(bytes));
        be.to_device(temporary.back(), mine.at(name).values.data(), bytes);
        sends.push_back({0, temporary.back(), bytes});
      }
      if (r.rank == 0 && chunk.owner != 0) {
        temporary.push_back(be.allocate(bytes));
        receives.push_back({chunk.owner, temporary.back(), bytes});
        received.push_back({&name, temporary.back()});
      }
    }
  be.synchronize();
  comm.exchange(sends, receives, 31997);
  std::map<std::string, HostTensor> out;
  if (r.rank == 0) {
    for (auto& [name, t] : mine) out[name] = std::move(t);
    for (const auto& chunk : r.chunks)
      for (const auto& [name, sizes] : chunk.weights) {
        if (chunk.owner == 0) continue;
        HostTensor h;
        h.shape = sizes;
        std::int64_t elements = 1;
        for (auto d : sizes) elements *= d;
        h.values.resize(static_cast<std::size_t>(elements));
        for (const auto& [n, buffer] : received)
          if (*n == name) be.to_host(h.values.data(), buffer, h.values.size() * 4);
        out[name] = std::move(h);
      }
  }
  for (void* p : temporary) be.release(p);
  return out;
}

// Every engine of this rank (each chunk's pieces, one per micro-batch slot).
template <typename F>
void for_each_engine(detail::PipelineRank& rank, F f) {
  for (auto& c : rank.local)
    for (auto& piece : c.pieces)
      for (auto& e : piece.engines) f(*e);
}

// Each operator's time an iteration (the median of the measured ones, summed over the
// micro-batches, the chunks and the slots that ran it): every operator the segments run, under
// the names they run it by (a kind's plan renamed for each of its segments, with its parallel
// operators), listed in the pipeline's order on every rank; a rank runs the operators of its
// stage, so the slowest rank's time for each is the stage's.
std::vector<OperatorProfile> operator_profile(detail::PipelineRank& rank, const PipelinePlan& pp,
                                              const Graph& model, Communicator& comm) {
  std::map<std::string, std::pair<double, double>> by_name;
  for_each_engine(rank, [&](detail::Engine& e) {
    const auto seconds = e.profile_seconds();
    const auto& steps = e.steps();
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto& [forward, backward] = by_name[steps[i].node->op.name];
      forward += seconds[2 * i];
      backward += seconds[2 * i + 1];
    }
  });
  std::map<std::string, NodeId> model_nodes;
  for (const auto& [id, n] : model.nodes()) model_nodes[n.op.name] = id;
  const SegmentChain chain = segment_chain(model);
  const std::int64_t sequence = attention_sequence(model);
  std::vector<std::pair<std::string, OpType>> rows;
  std::set<std::string> listed;
  for (int seg = 0; seg < static_cast<int>(chain.segments.size()); ++seg) {
    const Graph g =
        detail::segment_run(pp, model, chain, seg, rank.micro_batch_size, sequence).graph;
    for (const NodeId id : g.topological_order()) {
      const Node& n = g.node(id);
      if ((is_compute_op(n.op.type) || is_parallel_op(n.op.type)) &&
          listed.insert(n.op.name).second)
        rows.emplace_back(n.op.name, n.op.type);
    }
  }
  std::vector<double> mine;
  for (const auto& [name, type] : rows) {
    const auto it = by_name.find(name);
    mine.push_back(it == by_name.end() ? 0.0 : it->second.first);
    mine.push_back(it == by_name.end() ? 0.0 : it->second.second);
  }
  const auto all = comm.all_gather_host(mine);
  std::vector<OperatorProfile> out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    double forward = 0, backward = 0;
    for (std::size_t r = 0; r < all.size(); r += mine.size()) {
      forward = std::max(forward, all[r + 2 * k]);
      backward = std::max(backward, all[r + 2 * k + 1]);
    }
    if (forward + backward <= 0) continue;
    const auto& [name, type] = rows[k];
    const auto node = model_nodes.find(name);
    out.push_back({node == model_nodes.end() ? NodeId{-1} : node->second, name,
                   std::string(to_string(type)), forward * 1e3, backward * 1e3});
  }
  return out;
}

}  // namespace

TrainingResult train_pipeline(const Plan& plan, const TrainingOptions& options,
                              DeviceBackend& backend, Communicator& comm) {
  if (options.iterations < 1) throw InputError("at least one iteration is needed");
  if (options.warmup < 0) throw InputError("warm-up iterations cannot be negative");
  check_pipeline_run(plan, comm.size());
  const PipelinePlan& pp = *plan.pipeline;
  if (pp.grid().replica() > 1 && comm.name() == "nccl")
    throw LoweringError(
        "tensor- and context-parallel pipeline stages run on the CPU backend: NCCL splits its "
        "communicators over every rank at once, and each stage replica creates its own");
  TrainingResult result;
  const auto setup_start = clock::now();
  if (options.monitor) options.monitor->at(-1, ProgressMonitor::Phase::Setup, -1);
  const Graph model = pipeline_model(plan);
  auto rank = detail::make_pipeline_rank(plan, model, comm, backend, options.seed);
  // The copies of each device of each stage replica sum their gradients together (the sequence
  // shards of a replica sum theirs inside its segments' programs).
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < rank->stages; ++s)
    for (int t = 0; t < rank->replica; ++t) {
      std::vector<int> g;
      for (int c = 0; c < rank->copies; ++c) g.push_back(rank->world_rank(s, c, t));
      groups.push_back(g);
    }
  // The groups of consecutive copies an Experts task may spread its experts over (experts_ops:
  // the plan's EP over the replica's own split of them).
  for (int g = 2; g <= rank->copies; ++g) {
    if (rank->copies % g != 0 || pp.expert_parallel % g != 0) continue;
    for (int s = 0; s < rank->stages; ++s)
      for (int t = 0; t < rank->replica; ++t)
        for (int first = 0; first < rank->copies; first += g) {
          std::vector<int> members;
          for (int c = first; c < first + g; ++c) members.push_back(rank->world_rank(s, c, t));
          groups.push_back(members);
        }
  }
  comm.prepare_groups(groups);
  PipelineRun run(*rank, backend, comm, options);
  backend.synchronize();
  comm.barrier();
  result.setup_ms = std::chrono::duration<double, std::milli>(clock::now() - setup_start).count();

  PipelineMeasurement measured;
  measured.plan_dtype = executor::plan_dtype(plan.pcg);
  measured.compute_dtype = std::string(to_string(DataType::Float32));
  measured.recompute = rank->recompute ? "full" : "none";
  measured.zero_stage = rank->zero;
  std::vector<double> bubbles, expert_bytes;
  std::vector<std::vector<double>> stage_times;  // per measured iteration: [stage][fwd, bwd, idle]
  const int total = options.warmup + options.iterations;
  const std::size_t boxes = rank->schedule.size();
  if (options.profile) for_each_engine(*rank, [](detail::Engine& e) { e.set_profiling(true); });
  for (int it = 0; it < total; ++it) {
    if (options.profile && it == options.warmup)
      for_each_engine(*rank, [](detail::Engine& e) { e.reset_profile(); });
    const auto start = clock::now();
    rank->expert_copies.bytes_sent = 0;
    const Iteration i = run.iterate(it);
    if (it >= options.warmup) expert_bytes.push_back(rank->expert_copies.bytes_sent);
    if (options.profile && it >= options.warmup)
      for_each_engine(*rank, [](detail::Engine& e) { e.close_profile_iteration(); });
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    // Everyone's loss share, time, stage times and boxes, in one exchange.
    std::vector<double> mine = {i.loss, ms, i.forward, i.backward, i.idle, i.start};
    for (const auto& b : i.boxes)
      mine.insert(mine.end(), {static_cast<double>(b.chunk), static_cast<double>(b.micro_batch),
                               b.backward ? 1.0 : 0.0, b.start, b.end});
    const std::size_t width = 6 + 5 * boxes;
    const auto all = comm.all_gather_host(mine);
    // Ranks leave the barrier at slightly different times: boxes are placed on the clock the
    // ranks share (one machine's steady clock: starts within a second of each other), else each
    // from its own start.
    double first = 1e300, last = -1e300;
    for (int r = 0; r < comm.size(); ++r) {
      first = std::min(first, all[static_cast<std::size_t>(r) * width + 5]);
      last = std::max(last, all[static_cast<std::size_t>(r) * width + 5]);
    }
    const bool shared_clock = last - first < 1.0;
    IterationReport report;
    report.index = it;
    report.warmup = it < options.warmup;
    PipelineTimeline t;
    t.stages = rank->stages;
    t.micro_batches = rank->micro_batches;
    t.interleave = rank->interleave;
    t.measured = true;
    std::vector<double> per_stage(static_cast<std::size_t>(3 * rank->stages), 0.0);
    for (int r = 0; r < comm.size(); ++r) {
      const double* v = all.data() + static_cast<std::size_t>(r) * width;
      report.loss += v[0];
      report.milliseconds = std::max(report.milliseconds, v[1]);
      const PipelinePosition pos = pipeline_position(pp, r);
      for (int k = 0; k < 3; ++k)
        per_stage[3 * pos.stage + k] = std::max(per_stage[3 * pos.stage + k], v[2 + k]);
      // The timeline shows each stage's first copy (its replica's lead).
      if (pos.copy != 0 || r % rank->replica != 0) continue;
      const double shift = shared_clock ? v[5] - first : 0.0;
      for (std::size_t b = 0; b < boxes; ++b) {
        const double* x = v + 6 + 5 * b;
        t.boxes.push_back({pos.stage, static_cast<int>(x[0]), static_cast<int>(x[1]), x[2] > 0.5,
                           x[3] + shift, x[4] + shift});
      }
    }
    for (const auto& b : t.boxes) t.makespan = std::max(t.makespan, b.end);
    t.bubble_fraction = timeline_bubble_fraction(t.boxes, t.stages);
    if (report.warmup) {
      result.warmup_losses.push_back(report.loss);
    } else {
      result.losses.push_back(report.loss);
      result.iteration_ms.push_back(report.milliseconds);
      bubbles.push_back(t.bubble_fraction);
      stage_times.push_back(per_stage);
      measured.timeline = std::move(t);
    }
    if (options.on_iteration) options.on_iteration(report);
  }
  measured.bubble_fraction = median(bubbles);
  for (double b : comm.all_gather_host({median(expert_bytes)}))
    measured.expert_exchange_bytes = std::max(measured.expert_exchange_bytes, b);
  for (int s = 0; s < rank->stages; ++s) {
    StageMeasurement sm;
    sm.stage = s;
    std::vector<double> f, b, idle;
    for (const auto& x : stage_times) {
      f.push_back(x[3 * s] * 1e3);
      b.push_back(x[3 * s + 1] * 1e3);
      idle.push_back(x[3 * s + 2] * 1e3);
    }
    sm.forward_ms = median(f);
    sm.backward_ms = median(b);
    sm.idle_ms = median(idle);
    measured.stages.push_back(sm);
  }
  measured.timeline.stage_labels = stage_labels(pp);
  if (options.profile) result.profile = operator_profile(*rank, pp, model, comm);

  // Memory: what this rank allocated, by kind. The engines hold the weights, their gradients, the
  // optimizer state without ZeRO and the activations; the run itself the stash of recomputation
  // (activations), ZeRO's shard state (optimizer) and its staging (workspace).
  MemoryBreakdown mem;
  double engines = 0, engine_optimizer = 0, shard_state = 0, stash = 0;
  for (auto& c : rank->local) {
    for (const auto& piece : c.pieces)
      for (const auto& e : piece.engines) engines += static_cast<double>(e->device_bytes());
    for (const Slot* w : c.weights) {
      mem.weights += static_cast<double>(w->elements()) * w->elem_size;
      if (w->grad) mem.gradients += static_cast<double>(w->elements()) * 4;
    }
    for (const auto& piece : c.pieces)
      engine_optimizer += static_cast<double>(piece.engines[0]->optimizer_bytes());
    for (const float* p : {c.m, c.v, c.shard_weights})
      if (p) shard_state += static_cast<double>(c.shard) * 4;
    for (const auto& piece : c.pieces)
      stash += static_cast<double>(piece.stash.size() * piece.read_bytes);
  }
  const double runtime = static_cast<double>(rank->memory->bytes());
  mem.optimizer = engine_optimizer + shard_state;
  mem.activations = engines - mem.weights - mem.gradients - engine_optimizer + stash;
  mem.workspace = runtime - stash - shard_state;
  result.device_bytes = static_cast<std::size_t>(engines + runtime);
  const auto all = comm.all_gather_host({engines + runtime, mem.weights, mem.gradients,
                                         mem.optimizer, mem.activations, mem.workspace});
  for (int r = 0; r < comm.size(); ++r) {
    const double* v = all.data() + static_cast<std::size_t>(r) * 6;
    measured.peak_memory_bytes.push_back(v[0]);
    if (pipeline_position(pp, r).copy == 0 && r % rank->replica == 0)
      measured.memory.push_back({v[1], v[2], v[3], v[4], v[5]});
  }
  result.pipeline = std::move(measured);
  if (options.collect_weights) result.weights = collect_weights(*rank, backend, comm);
  return result;
}

}  // namespace unity::executor
