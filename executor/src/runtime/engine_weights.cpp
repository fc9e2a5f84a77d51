// Engine: weight gradients (Replicate's backward: the sum over the ranks holding copies), the
// optimizer update, and collecting results on rank 0.
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "../kernels/cpu/cpu_backend.h"
#include "engine.h"

namespace unity::executor::detail {
namespace {

std::string weight_name(const Graph& g, NodeId id) {
  const auto& name = g.node(id).op.name;
  return name.empty() ? fmt::format("node {}", id) : name;
}

// A host tensor of a node's full shape.
HostTensor host_tensor(const ParallelTensorShape& s) {
  HostTensor h;
  h.shape = s.sizes();
  h.integer = !is_floating(s.dtype);
  const auto n = static_cast<std::size_t>(s.num_elements());
  if (h.integer)
    h.integers.assign(n, 0);
  else
    h.values.assign(n, 0.0f);
  return h;
}

}  // namespace

void apply_optimizer(DeviceBackend& backend, DeviceMemory& memory, const OptimizerConfig& config,
                     int step, float* w, const float* g, float*& m, float*& v, std::int64_t n) {
  if (config.kind == "sgd") {
    backend.sgd(w, g, config.learning_rate, n);
  } else if (config.kind == "sgd-momentum") {
    if (!v) v = memory.allocate_floats(n);
    backend.sgd_momentum(w, g, v, config.learning_rate, config.momentum, n);
  } else {
    if (!m) m = memory.allocate_floats(n);
    if (!v) v = memory.allocate_floats(n);
    const float c1 = 1.0f - std::pow(config.beta1, static_cast<float>(step));
    const float c2 = 1.0f - std::pow(config.beta2, static_cast<float>(step));
    backend.adam(w, g, m, v, config.learning_rate, config.beta1, config.beta2, config.epsilon, c1,
                 c2, n);
  }
}

void Engine::synchronize_gradients(int iteration) {
  const auto start = std::chrono::steady_clock::now();
  struct Timer {
    Engine& e;
    std::chrono::steady_clock::time_point t;
    ~Timer() {
      if (e.profiling_) e.add_time(e.sync_s_, t);
    }
  } timer{*this, start};
  if (sync_staging_.size() < syncs_.size()) sync_staging_.resize(syncs_.size(), nullptr);
  for (std::size_t i = 0; i < syncs_.size(); ++i) {
    const GradientSync& sync = *syncs_[i];
    if (monitor_) monitor_->at(iteration, ProgressMonitor::Phase::GradientSync, sync.root);
    // The shards of this rank holding each cell.
    std::vector<std::vector<Shard*>> holders(sync.cells.size());
    i64 total = 0;
    for (std::size_t c = 0; c < sync.cells.size(); ++c) {
      for (auto& sh : shards_)
        if (sh.shard->root == sync.root && sh.slot->grad && sh.slot->region.contains(sync.cells[c]))
          holders[c].push_back(&sh);
      total += sync.cells[c].num_elements();
    }
    if (sync.cells.size() == 1 && holders[0].size() == 1 &&
        holders[0][0]->slot->region == sync.cells[0]) {
      backend_.synchronize();
      comm_.all_reduce(sync.ranks, holders[0][0]->slot->grad, total);
      continue;
    }
    if (!sync_staging_[i]) sync_staging_[i] = memory_.allocate_floats(total);
    float* buf = static_cast<float*>(sync_staging_[i]);
    i64 offset = 0;
    for (std::size_t c = 0; c < sync.cells.size(); ++c) {
      const Region& cell = sync.cells[c];
      for (std::size_t h = 0; h < holders[c].size(); ++h)
        copy_region(backend_, holders[c][h]->slot->grad, holders[c][h]->slot->region, buf + offset,
                    cell, cell, 4, h > 0);
      offset += cell.num_elements();
    }
    backend_.synchronize();
    comm_.all_reduce(sync.ranks, buf, total);
    offset = 0;
    for (std::size_t c = 0; c < sync.cells.size(); ++c) {
      const Region& cell = sync.cells[c];
      for (auto* h : holders[c])
        copy_region(backend_, buf + offset, cell, h->slot->grad, h->slot->region, cell, 4, false);
      offset += cell.num_elements();
    }
  }
}

void Engine::update(const OptimizerConfig& config, int step) {
  const auto start = std::chrono::steady_clock::now();
  for (auto& sh : shards_) {
    Slot* s = sh.slot;
    if (!s->grad) continue;
    const i64 n = s->elements();
    if (monitor_) monitor_->at(step, ProgressMonitor::Phase::Update, sh.shard->root);
    if (config.kind == "sgd") {
      backend_.sgd(s->f(), s->grad, config.learning_rate, n);
    } else {
      const bool fresh = !sh.v;
      apply_optimizer(backend_, memory_, config, step, s->f(), s->grad, sh.m, sh.v, n);
      if (fresh) optimizer_bytes_ += static_cast<std::size_t>(n) * 4 * (sh.m ? 2 : 1);
    }
  }
  if (profiling_) add_time(update_s_, start);
}

std::map<std::string, HostTensor> Engine::gather_weights(bool gradients) {
  // One sender per distinct (weight, region): rank 0 when it holds it, else the lowest rank.
  struct Item {
    NodeId root;
    Region region;
    int sender;
  };
  std::vector<Item> items;
  std::map<std::tuple<NodeId, std::vector<i64>, std::vector<i64>>, std::size_t> index;
  for (const auto& s : program_.shards) {
    if (gradients && !is_floating(program_.graph.node(s.root).outputs.at(0).dtype)) continue;
    auto key = std::make_tuple(s.root, s.region.begin, s.region.end);
    auto it = index.find(key);
    if (it == index.end()) {
      index[key] = items.size();
      items.push_back({s.root, s.region, s.rank});
    } else if (s.rank == 0 ||
               (items[it->second].sender != 0 && s.rank < items[it->second].sender)) {
      items[it->second].sender = s.rank;
    }
  }
  std::vector<Communicator::Message> sends, receives;
  std::vector<void*> temporary;
  for (const auto& item : items) {
    const int es = held_element_size(program_.graph.node(item.root).outputs.at(0).dtype);
    const std::size_t bytes = static_cast<std::size_t>(item.region.num_elements()) * es;
    if (item.sender == rank_ && rank_ != 0) {
      Slot* s = sources_by_region_.at({item.root, item.region.begin, item.region.end});
      sends.push_back({0, gradients ? static_cast<void*>(s->grad) : s->value, bytes});
    } else if (rank_ == 0 && item.sender != 0) {
      void* buf = backend_.allocate(bytes);
      temporary.push_back(buf);
      receives.push_back({item.sender, buf, bytes});
    }
  }
  backend_.synchronize();
  comm_.exchange(sends, receives, 31999);
  std::map<std::string, HostTensor> out;
  if (rank_ == 0) {
    std::size_t next = 0;
    for (const auto& item : items) {
      const auto& shape = program_.graph.node(item.root).outputs.at(0);
      const std::string name = weight_name(program_.graph, item.root);
      if (!out.count(name)) out[name] = host_tensor(shape);
      HostTensor& h = out[name];
      const int es = h.integer ? 8 : 4;
      const void* src = nullptr;
      std::vector<char> host(static_cast<std::size_t>(item.region.num_elements()) * es);
      if (item.sender == 0) {
        const Slot* s = sources_by_region_.at({item.root, item.region.begin, item.region.end});
        src = gradients ? static_cast<const void*>(s->grad) : s->value;
      } else {
        src = temporary[next++];
      }
      backend_.to_host(host.data(), src, host.size());
      void* dst =
          h.integer ? static_cast<void*>(h.integers.data()) : static_cast<void*>(h.values.data());
      cpu::copy_box_host({host.data(), dst, es, false, item.region.extents(),
                          std::vector<i64>(item.region.begin.size(), 0), h.shape, item.region.begin,
                          item.region.extents()});
    }
  }
  for (void* p : temporary) backend_.release(p);
  return out;
}

HostTensor Engine::gather_tensor(TensorRef ref) {
  const TensorInfo& t = program_.tensor(ref);
  const int es = held_element_size(t.shape.dtype);
  std::vector<int> pieces;
  for (int i = 0; i < static_cast<int>(t.piece_rank.size()); ++i)
    if (t.layout.copy_key(piece_index(t.shape, i).replica) == 0) pieces.push_back(i);
  std::vector<Communicator::Message> sends, receives;
  std::vector<void*> temporary;
  for (int i : pieces) {
    const std::size_t bytes =
        static_cast<std::size_t>(piece_region(t.shape, i).num_elements()) * es;
    if (t.piece_rank[i] == rank_ && rank_ != 0) {
      sends.push_back({0, pieces_.at({ref, i})->value, bytes});
    } else if (rank_ == 0 && t.piece_rank[i] != 0) {
      void* buf = backend_.allocate(bytes);
      temporary.push_back(buf);
      receives.push_back({t.piece_rank[i], buf, bytes});
    }
  }
  backend_.synchronize();
  comm_.exchange(sends, receives, 31998);
  HostTensor h = host_tensor(t.shape);
  if (rank_ == 0) {
    std::size_t next = 0;
    for (int i : pieces) {
      const Region r = piece_region(t.shape, i);
      const void* src = t.piece_rank[i] == 0 ? pieces_.at({ref, i})->value : temporary[next++];
      std::vector<char> host(static_cast<std::size_t>(r.num_elements()) * es);
      backend_.to_host(host.data(), src, host.size());
      void* dst =
          h.integer ? static_cast<void*>(h.integers.data()) : static_cast<void*>(h.values.data());
      // Partial sums add up; whole pieces land on zeros.
      cpu::copy_box_host({host.data(), dst, es, !h.integer, r.extents(),
                          std::vector<i64>(r.begin.size(), 0), h.shape, r.begin, r.extents()});
    }
  }
  for (void* p : temporary) backend_.release(p);
  return h;
}

}  // namespace unity::executor::detail
