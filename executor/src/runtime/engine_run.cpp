// Engine: one iteration's forward and backward passes.
#include <fmt/format.h>

#include "engine.h"
#include "unity/executor/run_files.h"

namespace unity::executor::detail {
namespace {

std::vector<i64> relative(const Region& r, const Region& within) {
  std::vector<i64> o(r.begin.size());
  for (std::size_t d = 0; d < o.size(); ++d) o[d] = r.begin[d] - within.begin[d];
  return o;
}

}  // namespace

void copy_region(DeviceBackend& be, const void* src, const Region& from, void* dst,
                 const Region& to, const Region& region, int elem_size, bool add) {
  BoxCopy c;
  c.src = src;
  c.dst = dst;
  c.elem_size = elem_size;
  c.add = add;
  c.src_shape = from.extents();
  c.src_offset = relative(region, from);
  c.dst_shape = to.extents();
  c.dst_offset = relative(region, to);
  c.extent = region.extents();
  be.copy_box(c);
}

void Engine::run_exchange(const std::vector<Send>& sends, const std::vector<Receive>& receives,
                          bool add_into, int tag, bool gradients) {
  std::vector<Communicator::Message> out, in;
  out.reserve(sends.size());
  in.reserve(receives.size());
  for (const auto& s : sends) {
    const void* base = gradients ? static_cast<const void*>(s.slot->grad) : s.slot->value;
    const int es = gradients ? 4 : s.slot->elem_size;
    const std::size_t bytes = static_cast<std::size_t>(s.region.num_elements()) * es;
    if (s.staging) {
      copy_region(backend_, base, s.slot->region, s.staging, s.region, s.region, es, false);
      out.push_back({s.peer, s.staging, bytes});
    } else {
      out.push_back({s.peer, const_cast<void*>(base), bytes});
    }
  }
  for (const auto& r : receives) {
    void* base = gradients ? static_cast<void*>(r.slot->grad) : r.slot->value;
    const int es = gradients ? 4 : r.slot->elem_size;
    in.push_back({r.peer, r.staging ? r.staging : base,
                  static_cast<std::size_t>(r.region.num_elements()) * es});
  }
  if (out.empty() && in.empty()) return;
  backend_.synchronize();
  comm_.exchange(out, in, tag);
  for (const auto& r : receives) {
    if (!r.staging) continue;
    void* base = gradients ? static_cast<void*>(r.slot->grad) : r.slot->value;
    const int es = gradients ? 4 : r.slot->elem_size;
    copy_region(backend_, r.staging, r.region, base, r.slot->region, r.region, es, add_into);
  }
}

void Engine::add_time(double& into, std::chrono::steady_clock::time_point since) {
  backend_.synchronize();
  into += std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void Engine::reset_profile() {
  forward_s_.assign(steps_.size(), 0.0);
  backward_s_.assign(steps_.size(), 0.0);
  sync_s_ = update_s_ = 0;
  profile_record_.clear();
}

void Engine::close_profile_iteration() {
  std::vector<double> entry;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    entry.push_back(i < forward_s_.size() ? forward_s_[i] : 0.0);
    entry.push_back(i < backward_s_.size() ? backward_s_[i] : 0.0);
  }
  entry.push_back(sync_s_);
  entry.push_back(update_s_);
  profile_record_.push_back(std::move(entry));
  forward_s_.assign(steps_.size(), 0.0);
  backward_s_.assign(steps_.size(), 0.0);
  sync_s_ = update_s_ = 0;
}

std::vector<double> Engine::profile_seconds() const {
  const std::size_t entries = 2 * steps_.size() + 2;
  std::vector<double> out(entries, 0.0);
  for (std::size_t e = 0; e < entries; ++e) {
    std::vector<double> values;
    for (const auto& it : profile_record_) values.push_back(it[e]);
    out[e] = median(values);
  }
  return out;
}

void Engine::forward(int iteration) {
  if (profiling_ && forward_s_.size() != steps_.size()) reset_profile();
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    StepState& s = steps_[i];
    if (!s.runner) continue;
    if (monitor_) monitor_->at(iteration, ProgressMonitor::Phase::Forward, s.node->id);
    const auto start = std::chrono::steady_clock::now();
    if (s.step->collective != Collective::None) {
      forward_collective(s);
    } else {
      run_exchange(s.sends, s.receives, false, static_cast<int>(i), false);
      for (const auto& c : s.copies)
        copy_region(backend_, c.from->value, c.from->region, c.to->value, c.to->region, c.region,
                    c.from->elem_size, false);
      StepContext ctx = context(s, iteration);
      s.runner->forward(ctx, s.tasks);
    }
    if (profiling_) add_time(forward_s_[i], start);
  }
}

void Engine::seed_loss_gradients(float scale) {
  for (const TensorRef& ref : program_.losses) {
    const TensorInfo& t = program_.tensor(ref);
    const float g = static_cast<float>(scale / static_cast<double>(t.shape.num_elements()));
    for (int i = 0; i < static_cast<int>(t.piece_rank.size()); ++i) {
      if (t.piece_rank[i] != rank_) continue;
      if (t.layout.copy_key(piece_index(t.shape, i).replica) != 0) continue;
      Slot* s = pieces_.at({ref, i});
      if (s->grad) backend_.fill(s->grad, g, s->elements());
    }
  }
}

double Engine::local_loss() const {
  double total = 0;
  for (const TensorRef& ref : program_.losses) {
    const TensorInfo& t = program_.tensor(ref);
    for (int i = 0; i < static_cast<int>(t.piece_rank.size()); ++i) {
      if (t.piece_rank[i] != rank_) continue;
      if (t.layout.copy_key(piece_index(t.shape, i).replica) != 0) continue;
      const Slot* s = pieces_.at({ref, i});
      total += backend_.sum(s->f(), s->elements()) / static_cast<double>(t.shape.num_elements());
    }
  }
  return total;
}

void Engine::backward(int iteration) {
  memory_.clear_weight_gradients();
  memory_.clear_gradients();
  seed_loss_gradients(1.0f);
  run_backward(iteration);
}

void Engine::run_backward(int iteration) {
  for (std::size_t i = steps_.size(); i-- > 0;) {
    StepState& s = steps_[i];
    if (!s.runner) continue;
    if (monitor_) monitor_->at(iteration, ProgressMonitor::Phase::Backward, s.node->id);
    const auto start = std::chrono::steady_clock::now();
    if (s.step->collective != Collective::None) {
      backward_collective(s);
    } else {
      StepContext ctx = context(s, iteration);
      s.runner->backward(ctx, s.tasks);
      for (const auto& c : s.grad_adds)
        copy_region(backend_, c.from->grad, c.from->region, c.to->grad, c.to->region, c.region, 4,
                    true);
      run_exchange(s.grad_sends, s.grad_receives, true, static_cast<int>(i), true);
    }
    if (profiling_) add_time(backward_s_[i], start);
  }
}

void Engine::forward_collective(StepState& s) {
  for (auto& g : s.groups) {
    if (s.step->collective == Collective::AllReduce) {
      backend_.copy(g.output->value, g.input->value, static_cast<std::size_t>(g.block) * 4);
      backend_.synchronize();
      comm_.all_reduce(g.ranks, g.output->f(), g.block);
      continue;
    }
    // ReduceScatter: block c of every member's partial piece, summed, lands on member c.
    const int k = static_cast<int>(g.ranks.size());
    const float* send = g.input->f();
    if (g.packed) {
      const auto& shape = g.input->shape;
      const i64 step = shape[g.dim] / k;
      for (int c = 0; c < k; ++c) {
        Region block = g.input->region;
        block.begin[g.dim] = g.input->region.begin[g.dim] + c * step;
        block.end[g.dim] = block.begin[g.dim] + step;
        copy_region(backend_, g.input->value, g.input->region,
                    static_cast<float*>(g.staging) + c * g.block, block, block, 4, false);
      }
      send = static_cast<const float*>(g.staging);
    }
    backend_.synchronize();
    comm_.reduce_scatter(g.ranks, send, g.output->f(), g.block);
  }
}

void Engine::backward_collective(StepState& s) {
  for (auto& g : s.groups) {
    if (s.step->collective == Collective::AllReduce) {
      if (!g.input->grad) continue;
      backend_.copy(g.staging, g.output->grad, static_cast<std::size_t>(g.block) * 4);
      backend_.synchronize();
      comm_.all_reduce(g.ranks, static_cast<float*>(g.staging), g.block);
      backend_.axpy(1.0f, static_cast<const float*>(g.staging), g.input->grad, g.block);
      continue;
    }
    if (!g.input->grad) continue;
    // The transpose of a reduce-scatter: every member gets every block of the gradient.
    const int k = static_cast<int>(g.ranks.size());
    backend_.synchronize();
    comm_.all_gather(g.ranks, g.output->grad, static_cast<float*>(g.staging), g.block);
    if (!g.packed) {
      backend_.axpy(1.0f, static_cast<const float*>(g.staging), g.input->grad, g.input->elements());
      continue;
    }
    const i64 step = g.input->shape[g.dim] / k;
    for (int c = 0; c < k; ++c) {
      Region block = g.input->region;
      block.begin[g.dim] = g.input->region.begin[g.dim] + c * step;
      block.end[g.dim] = block.begin[g.dim] + step;
      copy_region(backend_, static_cast<float*>(g.staging) + c * g.block, block, g.input->grad,
                  g.input->region, block, 4, true);
    }
  }
}

}  // namespace unity::executor::detail
