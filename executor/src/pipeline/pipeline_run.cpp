// PipelineRun: one rank's passes of an iteration in its schedule's order, the messages between
// stages and inside a stage replica, and the gradient synchronisation and update at the flush.
#include "pipeline_run.h"

#include <algorithm>
#include <chrono>

namespace unity::executor::detail {
namespace {

using clock = std::chrono::steady_clock;

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

// Tags of the exchanges inside a stage replica (pieces handing activations on): every device of
// the replica makes them in the same order.
constexpr int kReplicaTag = 31990;

}  // namespace

class PipelineRun::Impl {
 public:
  Impl(PipelineRank& r, DeviceBackend& backend, Communicator& comm, const TrainingOptions& options)
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
        if (last.output_bytes > 0 && last.output_has_gradient() && lead)
          wait([&] {
            comm_.receive({peer(mc + 1), c.output_buffer, last.output_bytes},
                          message_tag(mc + 1, a.micro_batch, m, true));
          });
        // Recomputed blocks run their forward again inside: timed with the backward, as the cost
        // model counts it.
        const auto start = clock::now();
        if (last.output_bytes > 0 && last.output_has_gradient() && last.output_needs_gradient)
          deliver_output_gradient(c, a.chunk, a.micro_batch);
        backward_pieces(c, a.chunk, a.micro_batch, slot, offset, loss_scale, it);
        be_.synchronize();
        record(out, a, mc, t0, start, true);
        if (first.input_bytes > 0 && first.input_has_gradient()) {
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

  // Hands replica rank `to` (into `dst` there) its `part` of a whole activation that replica rank
  // `from` holds (`whole` there), packed first into `pack` (on `from`) when it is not all of it.
  void send_part(int from, const void* whole, int to, void* dst, const Region& all,
                 const Region& part, void* pack, int elem_size) {
    const std::size_t bytes =
        static_cast<std::size_t>(part.num_elements()) * static_cast<std::size_t>(elem_size);
    if (part == all) return move(from, whole, to, dst, bytes, false, nullptr);
    const int me = r_.replica_rank;
    if (me != from && me != to) return;
    if (from == to) return copy_region(be_, whole, all, dst, part, part, elem_size, false);
    if (me == from) {
      copy_region(be_, whole, all, pack, part, part, elem_size, false);
      move(from, pack, to, nullptr, bytes, false, nullptr);
    } else {
      move(from, nullptr, to, dst, bytes, false, nullptr);
    }
  }

  // Adds the gradient of `part` (at replica rank `from`, `src` there) into the whole one at
  // replica rank `to` (`whole` there), received through `scratch`.
  void add_part(int from, const void* src, int to, void* whole, const Region& all,
                const Region& part, void* scratch) {
    const std::size_t bytes = static_cast<std::size_t>(part.num_elements()) * 4;
    if (part == all) return move(from, src, to, whole, bytes, true, scratch);
    const int me = r_.replica_rank;
    if (me != from && me != to) return;
    if (from == to) return copy_region(be_, src, part, whole, all, part, 4, true);
    if (me == from) {
      move(from, src, to, nullptr, bytes, false, nullptr);
    } else {
      move(from, nullptr, to, scratch, bytes, false, nullptr);
      copy_region(be_, scratch, part, whole, all, part, 4, true);
    }
  }

  // The chunk's incoming activation (at the replica's lead) to every device reading it.
  void deliver_input(LocalChunk& c, int j, int mb, const void* value) {
    auto& first = c.pieces.front();
    for (std::size_t i = 0; i < first.readers.size(); ++i) {
      const int reader = first.readers[i];
      void* dst =
          reader == r_.replica_rank ? r_.engine(j, 0, mb).input_slot(first.input)->value : nullptr;
      send_part(0, value, reader, dst, first.input_region, first.reader_regions[i], c.input_scratch,
                first.input_elem_size);
    }
  }

  // Piece p's output to the devices reading piece p + 1's input, forward.
  void hand_on(LocalChunk& c, int j, int p, int mb) {
    const auto& from = c.pieces[p];
    const auto& to = c.pieces[p + 1];
    const void* src = from.holder == r_.replica_rank
                          ? r_.engine(j, p, mb).output_piece(from.output, from.holder_piece)->value
                          : nullptr;
    for (std::size_t i = 0; i < to.readers.size(); ++i) {
      const int reader = to.readers[i];
      void* dst =
          reader == r_.replica_rank ? r_.engine(j, p + 1, mb).input_slot(to.input)->value : nullptr;
      send_part(from.holder, src, reader, dst, to.input_region, to.reader_regions[i], c.hand_off[p],
                to.input_elem_size);
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
        be_.copy(piece.stash[slot], e.input_slot(piece.input)->value, piece.read_bytes);
      e.set_batch_offset(offset);
      e.forward(it);
    }
  }

  // The gradient of piece p + 1's input, summed over the devices reading it, into piece p's
  // output (its holder's first copy: the other copies' gradients stay zero, as a loss's do).
  void hand_back(LocalChunk& c, int j, int p, int mb) {
    const auto& from = c.pieces[p];
    const auto& to = c.pieces[p + 1];
    // Integers carry no gradient, and one that nothing before needs is not handed back.
    if (!to.input_has_gradient() || !from.output_needs_gradient) return;
    void* dst = from.holder == r_.replica_rank
                    ? r_.engine(j, p, mb).output_piece(from.output, from.holder_piece)->grad
                    : nullptr;
    for (std::size_t i = 0; i < to.readers.size(); ++i) {
      const int reader = to.readers[i];
      const void* src =
          reader == r_.replica_rank ? r_.engine(j, p + 1, mb).input_slot(to.input)->grad : nullptr;
      add_part(reader, src, from.holder, dst, to.input_region, to.reader_regions[i], c.hand_off[p]);
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
          be_.copy(e.input_slot(piece.input)->value, piece.stash[slot], piece.read_bytes);
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
    for (std::size_t i = 0; i < first.readers.size(); ++i) {
      const int reader = first.readers[i];
      const void* src =
          reader == r_.replica_rank ? r_.engine(j, 0, mb).input_slot(first.input)->grad : nullptr;
      add_part(reader, src, 0, c.input_buffer, first.input_region, first.reader_regions[i],
               c.input_scratch);
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
      apply_optimizer(be_, *r_.memory, config_, step, c.shard_weights, c.shard_gradients, c.m, c.v,
                      c.shard);
      comm_.all_gather(r_.copy_group, c.shard_weights, c.flat_buffer, c.shard);
      pack(be_, c, false, false);
    }
  }

  PipelineRank& r_;
  DeviceBackend& be_;
  Communicator& comm_;
  Communicator& replica_;
  const TrainingOptions& options_;
  OptimizerConfig config_;
  std::vector<std::pair<void*, std::size_t>> staging_;
  std::size_t staging_used_ = 0;
};

// Rank 0 gets every weight: each replica assembles its shards at its lead, and each chunk's first
// copy's lead sends them, in model order.

PipelineRun::PipelineRun(PipelineRank& r, DeviceBackend& backend, Communicator& comm,
                         const TrainingOptions& options)
    : impl_(std::make_unique<Impl>(r, backend, comm, options)) {}
PipelineRun::~PipelineRun() = default;
Iteration PipelineRun::iterate(int it) { return impl_->iterate(it); }

}  // namespace unity::executor::detail
