#include "unity/executor/pipeline_training.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "pipeline_rank.h"
#include "unity/core/layer_segments.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/run_files.h"

namespace unity::executor {

void check_pipeline_run(const Plan& plan, int ranks) {
  if (!plan.pipeline) throw LoweringError("the plan is not pipelined");
  const PipelinePlan& p = *plan.pipeline;
  const int devices = p.pipeline_stages * p.data_parallel * p.tensor_parallel;
  if (ranks != devices)
    throw LoweringError(fmt::format(
        "the pipelined plan needs one rank per device: {} stages x {} copies x {} devices a "
        "replica = {} ranks, not {}",
        p.pipeline_stages, p.data_parallel, p.tensor_parallel, devices, ranks));
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
  for (const auto& [id, n] : plan.pcg.nodes())
    if (n.op.type == OpType::BatchNorm)
      throw LoweringError(fmt::format(
          "{} normalises over the batch, which a pipeline splits into micro-batches; the executor "
          "runs pipelined plans of models without BatchNorm",
          plan.pcg.describe(id)));
}

Graph pipeline_model(const Plan& plan) { return executed_graph(plan.pcg); }

PipelinePosition pipeline_position(const PipelinePlan& p, int rank) {
  const int replica = std::max(1, p.tensor_parallel);
  const int per_stage = replica * std::max(1, p.data_parallel);
  return {rank / per_stage, (rank % per_stage) / replica};
}

namespace {

using clock = std::chrono::steady_clock;
using detail::Engine;
using detail::LocalChunk;
using detail::PipelineRank;
using detail::Slot;

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

// Tags: each message of an iteration has its own (activations even, gradients odd).
int message_tag(int model_chunk, int micro_batch, int micro_batches, bool gradient) {
  return (model_chunk * micro_batches + micro_batch) * 2 + (gradient ? 1 : 0);
}

// Copies each weight's gradient (or value) into one flat buffer, or back.
void pack(DeviceBackend& be, const LocalChunk& c, bool gradients, bool into_flat) {
  std::int64_t offset = 0;
  for (Slot* w : c.weights) {
    if (!w->grad) continue;
    float* mine = gradients ? w->grad : w->f();
    const std::size_t bytes = static_cast<std::size_t>(w->elements()) * 4;
    if (into_flat)
      be.copy(c.flat_buffer + offset, mine, bytes);
    else
      be.copy(mine, c.flat_buffer + offset, bytes);
    offset += w->elements();
  }
}

struct Iteration {
  double loss = 0;      // this rank's share of the iteration's loss
  double forward = 0;   // seconds computing forwards
  double backward = 0;  // and backwards (with recomputation)
  double idle = 0;      // waiting for messages from other stages
  double start = 0;     // seconds on this machine's steady clock when the iteration began
  std::vector<TimelineBox> boxes;  // seconds from `start`
};

// Tags of the exchanges inside a stage replica (pieces handing activations on): every device of
// the replica makes them in the same order.
constexpr int kReplicaTag = 31990;

class PipelineRun {
 public:
  PipelineRun(PipelineRank& r, DeviceBackend& backend, Communicator& comm,
              const TrainingOptions& options)
      : r_(r), be_(backend), comm_(comm), replica_(*r.replica_comm), options_(options) {
    config_.kind = options.optimizer;
    config_.learning_rate =
        static_cast<float>(options.learning_rate > 0 ? options.learning_rate
                                                     : default_learning_rate(options.optimizer));
    config_.momentum = static_cast<float>(options.momentum);
    for (auto& c : r_.local) {
      if (r_.zero == 0) continue;
      pack(be_, c, false, true);  // the initial weights: equal on every copy
      be_.copy(c.shard_weights, c.flat_buffer + r_.copy * c.shard,
               static_cast<std::size_t>(c.shard) * 4);
    }
  }

  Iteration iterate(int it) {
    Iteration out;
    for (auto& c : r_.local)
      for (auto& piece : c.pieces) piece.engines[0]->clear_weight_gradients();
    for (auto& c : r_.local)
      if (c.shard_gradients)
        be_.fill_zero(c.shard_gradients, static_cast<std::size_t>(c.shard) * 4);
    staging_used_ = 0;
    const int chunks = r_.stages * r_.interleave;
    const int m = r_.micro_batches;
    const float loss_scale = 1.0f / static_cast<float>(m * r_.copies);
    const bool lead = r_.replica_rank == 0;  // talks to the other stages
    bool first_backward = true;
    be_.synchronize();
    comm_.barrier();
    const auto t0 = clock::now();
    out.start = std::chrono::duration<double>(t0.time_since_epoch()).count();
    auto wait = [&](auto&& f) {
      const auto start = clock::now();
      f();
      out.idle += seconds_since(start);
    };
    for (const PipelineAction& a : r_.schedule) {
      LocalChunk& c = r_.local[a.chunk];
      const int mc = c.model_chunk;
      const int slot = r_.slot.at({a.chunk, a.micro_batch});
      const std::int64_t offset =
          (static_cast<std::int64_t>(r_.copy) * m + a.micro_batch) * r_.micro_batch_size;
      auto& first = c.pieces.front();
      auto& last = c.pieces.back();
      if (options_.monitor)
        options_.monitor->at(
            it, a.backward ? ProgressMonitor::Phase::Backward : ProgressMonitor::Phase::Forward,
            -1);
      if (!a.backward) {
        if (first.input_bytes > 0 && lead)
          wait([&] {
            comm_.receive({peer(mc - 1), c.input_buffer, first.input_bytes},
                          message_tag(mc - 1, a.micro_batch, m, false));
          });
        const auto start = clock::now();
        if (first.input_bytes > 0) deliver_input(c, a.chunk, a.micro_batch, c.input_buffer);
        forward_pieces(c, a.chunk, a.micro_batch, slot, offset, it);
        be_.synchronize();
        record(out, a, mc, t0, start, false);
        if (mc + 1 == chunks)
          out.loss += r_.engine(a.chunk, static_cast<int>(c.pieces.size()) - 1, a.micro_batch)
                          .local_loss() *
                      loss_scale;
        if (last.output_bytes > 0) {
          const void* value = collect_output(c, a.chunk, a.micro_batch);
          if (lead)
            send(value, last.output_bytes, peer(mc + 1), message_tag(mc, a.micro_batch, m, false));
        }
      } else {
        if (first_backward && options_.before_phase)
          options_.before_phase(it, ProgressMonitor::Phase::Backward);
        first_backward = false;
        for (std::size_t p = 0; p < c.pieces.size(); ++p)
          r_.engine(a.chunk, static_cast<int>(p), a.micro_batch).begin_backward();
        if (last.output_bytes > 0 && lead)
          wait([&] {
            comm_.receive({peer(mc + 1), c.output_buffer, last.output_bytes},
                          message_tag(mc + 1, a.micro_batch, m, true));
          });
        // Recomputed blocks run their forward again inside: timed with the backward, as the cost
        // model counts it.
        const auto start = clock::now();
        if (last.output_bytes > 0) deliver_output_gradient(c, a.chunk, a.micro_batch);
        backward_pieces(c, a.chunk, a.micro_batch, slot, offset, loss_scale, it);
        be_.synchronize();
        record(out, a, mc, t0, start, true);
        if (first.input_bytes > 0) {
          collect_input_gradient(c, a.chunk, a.micro_batch);
          if (lead)
            send(c.input_buffer, first.input_bytes, peer(mc - 1),
                 message_tag(mc, a.micro_batch, m, true));
        }
        scatter_gradients(c);
      }
    }
    wait([&] { comm_.wait_sends(); });
    if (options_.before_phase) options_.before_phase(it, ProgressMonitor::Phase::GradientSync);
    if (options_.monitor) options_.monitor->at(it, ProgressMonitor::Phase::GradientSync, -1);
    synchronize_and_update(it);
    be_.synchronize();
    return out;
  }

 private:
  // The lead device of the replica running model chunk `model_chunk` in this copy.
  int peer(int model_chunk) const { return r_.world_rank(model_chunk % r_.stages, r_.copy, 0); }

  // Moves `bytes` from replica rank `from` (buffer `src` there) to replica rank `to` (`dst`),
  // adding into `dst` with `add` (through `scratch`, which must hold `bytes`).
  void move(int from, const void* src, int to, void* dst, std::size_t bytes, bool add,
            void* scratch) {
    const int me = r_.replica_rank;
    if (me != from && me != to) return;
    if (from == to) {
      if (add)
        be_.axpy(1.0f, static_cast<const float*>(src), static_cast<float*>(dst),
                 static_cast<std::int64_t>(bytes / 4));
      else
        be_.copy(dst, src, bytes);
      return;
    }
    be_.synchronize();
    if (me == from) {
      replica_.exchange({{to, const_cast<void*>(src), bytes}}, {}, kReplicaTag);
    } else {
      replica_.exchange({}, {{from, add ? scratch : dst, bytes}}, kReplicaTag);
      if (add)
        be_.axpy(1.0f, static_cast<const float*>(scratch), static_cast<float*>(dst),
                 static_cast<std::int64_t>(bytes / 4));
    }
  }

  // The chunk's incoming activation (at the replica's lead) to every device reading it.
  void deliver_input(LocalChunk& c, int j, int mb, const void* value) {
    auto& first = c.pieces.front();
    for (int reader : first.readers) {
      void* dst =
          reader == r_.replica_rank ? r_.engine(j, 0, mb).input_slot(first.input)->value : nullptr;
      move(0, value, reader, dst, first.input_bytes, false, nullptr);
    }
  }

  // Piece p's output to the devices reading piece p + 1's input, forward.
  void hand_on(LocalChunk& c, int j, int p, int mb) {
    const auto& from = c.pieces[p];
    const auto& to = c.pieces[p + 1];
    const void* src = from.holder == r_.replica_rank
                          ? r_.engine(j, p, mb).output_piece(from.output, from.holder_piece)->value
                          : nullptr;
    for (int reader : to.readers) {
      void* dst =
          reader == r_.replica_rank ? r_.engine(j, p + 1, mb).input_slot(to.input)->value : nullptr;
      move(from.holder, src, reader, dst, from.output_bytes, false, nullptr);
    }
  }

  // Every piece's forward in turn; a recomputed block first keeps its input for the backward.
  void forward_pieces(LocalChunk& c, int j, int mb, int slot, std::int64_t offset, int it) {
    gather_weights(c);
    for (std::size_t p = 0; p < c.pieces.size(); ++p) {
      if (p > 0) hand_on(c, j, static_cast<int>(p) - 1, mb);
      auto& piece = c.pieces[p];
      Engine& e = r_.engine(j, static_cast<int>(p), mb);
      if (!piece.stash.empty())
        be_.copy(piece.stash[slot], e.input_slot(piece.input)->value, piece.input_bytes);
      e.set_batch_offset(offset);
      e.forward(it);
    }
  }

  // The gradient of piece p + 1's input, summed over the devices reading it, into piece p's
  // output (its holder's first copy: the other copies' gradients stay zero, as a loss's do).
  void hand_back(LocalChunk& c, int j, int p, int mb) {
    const auto& from = c.pieces[p];
    const auto& to = c.pieces[p + 1];
    void* dst = from.holder == r_.replica_rank
                    ? r_.engine(j, p, mb).output_piece(from.output, from.holder_piece)->grad
                    : nullptr;
    for (int reader : to.readers) {
      const void* src =
          reader == r_.replica_rank ? r_.engine(j, p + 1, mb).input_slot(to.input)->grad : nullptr;
      move(reader, src, from.holder, dst, from.output_bytes, true, c.hand_off[p]);
    }
  }

  void backward_pieces(LocalChunk& c, int j, int mb, int slot, std::int64_t offset,
                       float loss_scale, int it) {
    gather_weights(c);
    const int pieces = static_cast<int>(c.pieces.size());
    if (c.pieces.back().output_bytes == 0)
      r_.engine(j, pieces - 1, mb).seed_loss_gradients(loss_scale);
    for (int p = pieces - 1; p >= 0; --p) {
      auto& piece = c.pieces[p];
      Engine& e = r_.engine(j, p, mb);
      if (piece.recomputed) {
        // Its activations went with the next micro-batch's forward: back from the kept input.
        if (!piece.stash.empty())
          be_.copy(e.input_slot(piece.input)->value, piece.stash[slot], piece.input_bytes);
        e.set_batch_offset(offset);
        e.forward(it);
      }
      e.run_backward(it);
      if (p > 0) hand_back(c, j, p - 1, mb);
    }
  }

  // The chunk's output (from its holder) at the replica's lead, for the next stage.
  const void* collect_output(LocalChunk& c, int j, int mb) {
    const auto& last = c.pieces.back();
    const void* src = last.holder == r_.replica_rank
                          ? r_.engine(j, static_cast<int>(c.pieces.size()) - 1, mb)
                                .output_piece(last.output, last.holder_piece)
                                ->value
                          : nullptr;
    if (last.holder == 0) return src;
    move(last.holder, src, 0, c.output_buffer, last.output_bytes, false, nullptr);
    return c.output_buffer;
  }

  // The gradient from the next stage (at the lead) into the output's holder.
  void deliver_output_gradient(LocalChunk& c, int j, int mb) {
    const auto& last = c.pieces.back();
    void* dst = last.holder == r_.replica_rank
                    ? r_.engine(j, static_cast<int>(c.pieces.size()) - 1, mb)
                          .output_piece(last.output, last.holder_piece)
                          ->grad
                    : nullptr;
    move(0, c.output_buffer, last.holder, dst, last.output_bytes, false, nullptr);
  }

  // The gradient of the chunk's input, summed over its readers, at the lead (c.input_buffer).
  void collect_input_gradient(LocalChunk& c, int j, int mb) {
    auto& first = c.pieces.front();
    if (r_.replica_rank == 0) be_.fill_zero(c.input_buffer, first.input_bytes);
    for (int reader : first.readers) {
      const void* src =
          reader == r_.replica_rank ? r_.engine(j, 0, mb).input_slot(first.input)->grad : nullptr;
      move(reader, src, 0, c.input_buffer, first.input_bytes, true, c.input_scratch);
    }
  }

  // Sends from a staging copy: the engine's buffer may change before the message is received.
  void send(const void* data, std::size_t bytes, int to, int tag) {
    if (staging_used_ == staging_.size()) staging_.push_back({r_.memory->allocate(bytes), bytes});
    auto& [buffer, size] = staging_[staging_used_++];
    if (size < bytes) throw std::logic_error("pipeline staging buffer too small");
    be_.copy(buffer, data, bytes);
    be_.synchronize();
    comm_.send_async({to, buffer, bytes}, tag);
  }

  void record(Iteration& out, const PipelineAction& a, int mc, clock::time_point t0,
              clock::time_point start, bool backward) {
    const auto end = clock::now();
    const double s = std::chrono::duration<double>(start - t0).count();
    const double e = std::chrono::duration<double>(end - t0).count();
    (backward ? out.backward : out.forward) += e - s;
    out.boxes.push_back({r_.stage, mc, a.micro_batch, backward, s, e});
  }

  // ZeRO 3: the chunk's weights are gathered from their shards before every pass.
  void gather_weights(LocalChunk& c) {
    if (r_.zero < 3) return;
    comm_.all_gather(r_.copy_group, c.shard_weights, c.flat_buffer, c.shard);
    pack(be_, c, false, false);
  }

  // ZeRO 2/3: every micro-batch's weight gradients are reduce-scattered at once; each copy keeps
  // the sum of its shard.
  void scatter_gradients(LocalChunk& c) {
    if (r_.zero < 2) return;
    pack(be_, c, true, true);
    comm_.reduce_scatter(r_.copy_group, c.flat_buffer, c.shard_incoming, c.shard);
    be_.axpy(1.0f, c.shard_incoming, c.shard_gradients, c.shard);
    for (auto& piece : c.pieces) piece.engines[0]->clear_weight_gradients();
  }

  void synchronize_and_update(int it) {
    const int step = it + 1;
    for (auto& c : r_.local) {
      // Weights held by several devices of the replica sum their gradients first.
      for (auto& piece : c.pieces) piece.engines[0]->synchronize_gradients(it);
      if (r_.zero == 0) {
        for (Slot* w : c.weights)
          if (w->grad && r_.copies > 1) comm_.all_reduce(r_.copy_group, w->grad, w->elements());
        for (auto& piece : c.pieces) piece.engines[0]->update(config_, step);
        continue;
      }
      if (r_.zero == 1) {
        pack(be_, c, true, true);
        comm_.reduce_scatter(r_.copy_group, c.flat_buffer, c.shard_gradients, c.shard);
      }
      detail::apply_optimizer(be_, *r_.memory, config_, step, c.shard_weights, c.shard_gradients,
                              c.m, c.v, c.shard);
      comm_.all_gather(r_.copy_group, c.shard_weights, c.flat_buffer, c.shard);
      pack(be_, c, false, false);
    }
  }

  PipelineRank& r_;
  DeviceBackend& be_;
  Communicator& comm_;
  Communicator& replica_;
  const TrainingOptions& options_;
  detail::OptimizerConfig config_;
  std::vector<std::pair<void*, std::size_t>> staging_;
  std::size_t staging_used_ = 0;
};

// Rank 0 gets every weight: each replica assembles its shards at its lead, and each chunk's first
// copy's lead sends them, in model order.
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

}  // namespace

TrainingResult train_pipeline(const Plan& plan, const TrainingOptions& options,
                              DeviceBackend& backend, Communicator& comm) {
  if (options.iterations < 1) throw InputError("at least one iteration is needed");
  if (options.warmup < 0) throw InputError("warm-up iterations cannot be negative");
  check_pipeline_run(plan, comm.size());
  const PipelinePlan& pp = *plan.pipeline;
  if (pp.tensor_parallel > 1 && comm.name() == "nccl")
    throw LoweringError(
        "tensor-parallel pipeline stages run on the CPU backend: NCCL splits its communicators "
        "over every rank at once, and each stage replica creates its own");
  TrainingResult result;
  const auto setup_start = clock::now();
  if (options.monitor) options.monitor->at(-1, ProgressMonitor::Phase::Setup, -1);
  const Graph model = pipeline_model(plan);
  auto rank = detail::make_pipeline_rank(plan, model, comm, backend, options.seed);
  // The copies of each device of each stage replica sum their gradients together.
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < rank->stages; ++s)
    for (int t = 0; t < rank->tp; ++t) {
      std::vector<int> g;
      for (int c = 0; c < rank->copies; ++c) g.push_back(rank->world_rank(s, c, t));
      groups.push_back(g);
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
  std::vector<double> bubbles;
  std::vector<std::vector<double>> stage_times;  // per measured iteration: [stage][fwd, bwd, idle]
  const int total = options.warmup + options.iterations;
  const std::size_t boxes = rank->schedule.size();
  for (int it = 0; it < total; ++it) {
    const auto start = clock::now();
    const Iteration i = run.iterate(it);
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
      if (pos.copy != 0 || r % rank->tp != 0) continue;
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
      stash += static_cast<double>(piece.stash.size() * piece.input_bytes);
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
    if (pipeline_position(pp, r).copy == 0 && r % rank->tp == 0)
      measured.memory.push_back({v[1], v[2], v[3], v[4], v[5]});
  }
  result.pipeline = std::move(measured);
  if (options.collect_weights) result.weights = collect_weights(*rank, backend, comm);
  return result;
}

}  // namespace unity::executor
