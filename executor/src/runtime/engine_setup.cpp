// Engine construction: every buffer, message and kernel call of this rank, decided once.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "../kernels/cpu/cpu_backend.h"
#include "engine.h"

namespace unity::executor::detail {
namespace {

// The inputs `rank` reads in more than one region, with the bounding box of those regions.
std::map<NodeId, Region> input_boxes(const Program& program, int rank) {
  std::map<NodeId, Region> first, boxes;
  for (const auto& step : program.steps)
    for (const auto& task : step.tasks) {
      if (task.rank != rank) continue;
      for (const auto& req : task.inputs) {
        const TensorInfo& t = program.tensor(req.tensor);
        if (t.origin != TensorOrigin::Input) continue;
        auto [it, fresh] = first.emplace(t.root, req.region);
        if (fresh || it->second == req.region) continue;
        auto [box, new_box] = boxes.emplace(t.root, bounding_box(it->second, req.region));
        if (!new_box) box->second = bounding_box(box->second, req.region);
      }
    }
  return boxes;
}

// Every group a collective of the program runs on, in program order (the same list on every rank).
std::vector<std::vector<int>> collective_groups(const Program& p) {
  std::vector<std::vector<int>> groups;
  auto add = [&](std::vector<int> g) {
    if (g.size() >= 2 && std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(std::move(g));
  };
  for (const auto& step : p.steps) {
    for (const auto& g : step.groups) add(g);
    for (const auto& tasks : step.statistics_groups) {
      std::set<int> ranks;
      for (int t : tasks) ranks.insert(step.tasks[t].rank);
      add(std::vector<int>(ranks.begin(), ranks.end()));
    }
  }
  for (const auto& s : p.gradient_syncs) add(s.ranks);
  std::vector<int> all;
  for (int r = 0; r < p.ranks; ++r) all.push_back(r);
  add(all);
  return groups;
}

}  // namespace

Engine::Engine(const Program& program, DeviceBackend& backend, Communicator& comm,
               const SourceValues& sources, ProgressMonitor* monitor, bool training,
               const Engine* weights_from)
    : program_(program),
      backend_(backend),
      comm_(comm),
      sources_(sources),
      monitor_(monitor),
      training_(training),
      rank_(comm.rank()),
      memory_(backend),
      weights_from_(weights_from) {
  if (comm.size() != program.ranks)
    throw LoweringError(fmt::format("the program was lowered for {} ranks but the run has {}",
                                    program.ranks, comm.size()));
  comm_.prepare_groups(collective_groups(program));
  for (const auto& s : program.shards) {
    if (s.rank != rank_) continue;
    const TensorInfo* info = nullptr;
    for (const auto& [ref, t] : program.tensors)
      if (t.root == s.root && t.origin == TensorOrigin::Weight) {
        info = &t;
        break;
      }
    shards_.push_back({&s, source_slot(*info, s.region)});
  }
  input_boxes_ = input_boxes(program, rank_);
  for (const auto& step : program.steps) setup_step(step);
  for (const auto& sync : program.gradient_syncs)
    if (std::find(sync.ranks.begin(), sync.ranks.end(), rank_) != sync.ranks.end())
      syncs_.push_back(&sync);
}

Slot* Engine::new_slot(const Region& region, DataType dtype, bool grad, bool weight) {
  Slot& s = slots_.emplace_back();
  s.region = region;
  s.shape = region.extents();
  s.elem_size = held_element_size(dtype);
  s.dtype = dtype;
  s.value = memory_.allocate(static_cast<std::size_t>(region.num_elements()) * s.elem_size);
  if (grad) s.grad = memory_.allocate_gradient(region.num_elements(), weight);
  return &s;
}

Slot* Engine::piece(TensorRef t, int index) {
  auto key = std::make_pair(t, index);
  auto it = pieces_.find(key);
  if (it != pieces_.end()) return it->second;
  const TensorInfo& info = program_.tensor(t);
  Slot* s = new_slot(piece_region(info.shape, index), info.shape.dtype, info.requires_grad);
  pieces_[key] = s;
  return s;
}

Slot* Engine::source_slot(const TensorInfo& t, const Region& region) {
  auto key = std::make_tuple(t.root, region.begin, region.end);
  auto it = sources_by_region_.find(key);
  if (it != sources_by_region_.end()) return it->second;
  const bool weight = t.origin == TensorOrigin::Weight;
  if (weight && weights_from_) {
    Slot* shared = weights_from_->sources_by_region_.at(key);
    sources_by_region_[key] = shared;
    return shared;
  }
  const Node& root = program_.graph.node(t.root);
  Slot* s = new_slot(region, root.outputs.at(0).dtype, t.requires_grad, weight);
  fill_source(t, s);
  sources_by_region_[key] = s;
  return s;
}

void Engine::fill_source(const TensorInfo& t, Slot* s) {
  const Node& root = program_.graph.node(t.root);
  const auto& root_shape = root.outputs.at(0);
  const Region& region = s->region;
  const std::size_t bytes = static_cast<std::size_t>(region.num_elements()) * s->elem_size;
  const HostTensor* given = nullptr;
  if (sources_.given) {
    auto g = sources_.given->find(t.root);
    if (g != sources_.given->end()) given = &g->second;
  }
  // The whole tensor to slice from: the values evaluate() was given, else a Constant's own.
  const void* whole = nullptr;
  std::size_t count = 0;
  if (given) {
    whole = given->integer ? static_cast<const void*>(given->integers.data())
                           : static_cast<const void*>(given->values.data());
    count = given->integer ? given->integers.size() : given->values.size();
  } else if (root.op.type == OpType::Constant) {
    const TensorValues& v = *root.op.values;
    whole = v.is_integer() ? static_cast<const void*>(v.integers().data())
                           : static_cast<const void*>(v.floats().data());
    count = static_cast<std::size_t>(v.size());
  }
  if (whole) {
    // Slice the region out of the whole tensor on the host, then upload.
    std::vector<char> host(bytes);
    BoxCopy c;
    c.src = whole;
    c.dst = host.data();
    c.elem_size = s->elem_size;
    c.src_shape = root_shape.sizes();
    c.src_offset = region.begin;
    c.dst_shape = region.extents();
    c.dst_offset.assign(region.begin.size(), 0);
    c.extent = region.extents();
    const std::size_t expected = static_cast<std::size_t>(root_shape.num_elements());
    if (count != expected)
      throw InputError(fmt::format("value given for {} has the wrong number of elements",
                                   program_.graph.describe(t.root)));
    cpu::copy_box_host(c);
    backend_.to_device(s->value, host.data(), bytes);
    return;
  }
  // A micro-batch of a pipeline: the same rows of the whole model's tensor.
  std::vector<std::int64_t> sizes = root_shape.sizes();
  Region global = region;
  if (auto g = sources_.global_sizes.find(t.root); g != sources_.global_sizes.end()) {
    sizes = g->second;
    global.begin[0] += sources_.batch_offset;
    global.end[0] += sources_.batch_offset;
  }
  const SourceRole role = source_role(program_.graph, t.root, sources_.seed);
  if (is_floating(root_shape.dtype)) {
    const auto v = synthetic_floats(role, sizes, global);
    backend_.to_device(s->value, v.data(), bytes);
  } else {
    const auto v = synthetic_integers(role, sizes, global);
    backend_.to_device(s->value, v.data(), bytes);
  }
}

void Engine::set_batch_offset(std::int64_t offset) {
  if (offset == sources_.batch_offset) return;
  sources_.batch_offset = offset;
  for (const auto& [key, slot] : sources_by_region_) {
    const NodeId root = std::get<0>(key);
    if (!sources_.global_sizes.count(root)) continue;
    for (const auto& [ref, t] : program_.tensors)
      if (t.root == root && t.origin == TensorOrigin::Input) {
        fill_source(t, slot);
        break;
      }
  }
}

Slot* Engine::view_of(const Slot& whole, const Region& region) {
  const i64 offset = offset_in(whole.region, region.begin);
  Slot& view = slots_.emplace_back();
  view.region = region;
  view.shape = region.extents();
  view.elem_size = whole.elem_size;
  view.dtype = whole.dtype;
  view.value = static_cast<char*>(whole.value) + offset * whole.elem_size;
  view.grad = whole.grad ? whole.grad + offset : nullptr;
  return &view;
}

Slot* Engine::input_slot(NodeId input) {
  Slot* found = nullptr;
  for (const auto& [key, slot] : sources_by_region_) {
    if (std::get<0>(key) != input) continue;
    if (found)
      throw LoweringError(fmt::format("{} is read in pieces; a pipeline stage needs it whole",
                                      program_.graph.describe(input)));
    found = slot;
  }
  if (!found)
    throw LoweringError(
        fmt::format("{} is not read on rank {}", program_.graph.describe(input), rank_));
  return found;
}

std::vector<Slot*> Engine::weight_slots() const {
  std::vector<Slot*> out;
  for (const auto& sh : shards_) out.push_back(sh.slot);
  return out;
}

std::size_t Engine::optimizer_bytes() const { return optimizer_bytes_; }

void Engine::setup_step(const Step& step) {
  StepState& s = steps_.emplace_back();
  s.step = &step;
  s.node = &program_.graph.node(step.node);
  if (step.fused_away) return;
  s.runner = make_op_runner(program_.graph, *s.node);
  if (step.collective != Collective::None) {
    setup_collective(s);
    return;
  }
  setup_transfers(s);
  for (auto& tb : s.tasks) {
    for (int o = 0; o < static_cast<int>(s.node->outputs.size()); ++o) {
      const TensorRef ref{s.node->id, o};
      if (s.runner->output_is_input()) {
        const TensorInfo& info = program_.tensor(ref);
        Slot& alias = slots_.emplace_back();
        alias.region = piece_region(info.shape, tb.task->index);
        alias.shape = alias.region.extents();
        alias.elem_size = tb.in[0]->elem_size;
        alias.dtype = tb.in[0]->dtype;
        alias.value = tb.in[0]->value;
        alias.grad = info.requires_grad ? tb.in[0]->grad : nullptr;
        pieces_[{ref, tb.task->index}] = &alias;
        tb.out.push_back(&alias);
      } else {
        tb.out.push_back(piece(ref, tb.task->index));
      }
    }
  }
  StepContext ctx = context(s, 0);
  s.runner->prepare(ctx, s.tasks);
}

void Engine::setup_transfers(StepState& s) {
  const Step& step = *s.step;
  auto staging = [&](const Region& r, int es) {
    return memory_.allocate(static_cast<std::size_t>(r.num_elements()) * es);
  };
  for (const auto& task : step.tasks) {
    if (task.rank == rank_) {
      TaskBuffers tb;
      tb.task = &task;
      for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        const Request& req = task.inputs[i];
        const TensorInfo& t = program_.tensor(req.tensor);
        if (t.origin != TensorOrigin::Placed) {
          const auto box =
              t.origin == TensorOrigin::Input ? input_boxes_.find(t.root) : input_boxes_.end();
          if (box == input_boxes_.end()) {
            tb.in.push_back(source_slot(t, req.region));
            continue;
          }
          // One of several regions of an input read here: from the slot of their bounding box.
          Slot* whole = source_slot(t, box->second);
          if (whole->region == req.region) {
            tb.in.push_back(whole);
          } else if (is_contiguous_within(whole->region, req.region)) {
            tb.in.push_back(view_of(*whole, req.region));
          } else {
            Slot* slot = new_slot(req.region, t.shape.dtype, t.requires_grad);
            s.copies.push_back({whole, slot, req.region});
            if (t.requires_grad) s.grad_adds.push_back({slot, whole, req.region});
            tb.in.push_back(slot);
          }
          continue;
        }
        const auto& frags = task.fragments[i];
        if (frags.size() == 1 && frags[0].rank == rank_ && frags[0].region == req.region) {
          Slot* p = piece(req.tensor, frags[0].piece);
          if (p->region == req.region) {
            tb.in.push_back(p);
            continue;
          }
          if (is_contiguous_within(p->region, req.region)) {
            tb.in.push_back(view_of(*p, req.region));
            continue;
          }
        }
        Slot* slot = new_slot(req.region, t.shape.dtype, t.requires_grad);
        for (const auto& f : frags) {
          if (f.rank == rank_) {
            Slot* p = piece(req.tensor, f.piece);
            s.copies.push_back({p, slot, f.region});
            if (t.requires_grad) s.grad_adds.push_back({slot, p, f.region});
          } else {
            void* buf = f.region == req.region ? nullptr : staging(f.region, slot->elem_size);
            s.receives.push_back({f.rank, slot, f.region, buf});
            if (t.requires_grad)
              s.grad_sends.push_back(
                  {f.rank, slot, f.region, buf ? staging(f.region, 4) : nullptr});
          }
        }
        tb.in.push_back(slot);
      }
      s.tasks.push_back(std::move(tb));
    } else {
      for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        const Request& req = task.inputs[i];
        const TensorInfo& t = program_.tensor(req.tensor);
        if (t.origin != TensorOrigin::Placed) continue;
        for (const auto& f : task.fragments[i]) {
          if (f.rank != rank_) continue;
          Slot* p = piece(req.tensor, f.piece);
          void* buf = f.region == p->region ? nullptr : staging(f.region, p->elem_size);
          s.sends.push_back({task.rank, p, f.region, buf});
          if (t.requires_grad)
            s.grad_receives.push_back({task.rank, p, f.region, staging(f.region, 4)});
        }
      }
    }
  }
}

void Engine::setup_collective(StepState& s) {
  const Step& step = *s.step;
  const Node& n = *s.node;
  const TensorRef in_ref = n.inputs[0];
  const TensorInfo& in = program_.tensor(in_ref);
  const int k = static_cast<int>(n.op.attrs.get_int("degree"));
  if (step.collective == Collective::AllReduce) {
    for (std::size_t g = 0; g < step.groups.size(); ++g) {
      const auto& ranks = step.groups[g];
      const auto at = std::find(ranks.begin(), ranks.end(), rank_);
      if (at == ranks.end()) continue;
      const int j = static_cast<int>(g) * k + static_cast<int>(at - ranks.begin());
      StepState::Group grp;
      grp.ranks = ranks;
      grp.input = piece(in_ref, j);
      grp.output = piece({n.id, 0}, j);
      grp.block = grp.output->elements();
      grp.staging = memory_.allocate_floats(grp.block);
      s.groups.push_back(grp);
    }
    return;
  }
  // ReduceScatter: Reduce(k) whose only reader is Partition(dim, k).
  const Node& part = program_.graph.node(step.fused_partition);
  const TensorInfo& out = program_.tensor({part.id, 0});
  const auto& mid = n.outputs.at(0);
  const int dim = mid.axis(static_cast<int>(part.op.attrs.get_int("dim")));
  for (std::size_t j = 0; j < step.groups.size(); ++j) {
    const auto& ranks = step.groups[j];
    const auto at = std::find(ranks.begin(), ranks.end(), rank_);
    if (at == ranks.end()) continue;
    const PieceIndex pi = piece_index(mid, static_cast<int>(j));
    StepState::Group grp;
    grp.ranks = ranks;
    grp.dim = dim;
    for (int ch = 0; ch < k; ++ch) {
      const int idx = piece_linear(in.shape, {pi.block, pi.replica * k + ch});
      if (in.piece_rank[idx] == rank_) grp.input = piece(in_ref, idx);
    }
    PieceIndex child = pi;
    child.block[dim] = pi.block[dim] * k + static_cast<int>(at - ranks.begin());
    grp.output = piece({part.id, 0}, piece_linear(out.shape, child));
    grp.block = grp.output->elements();
    for (int d = 0; d < dim; ++d) grp.packed = grp.packed || grp.input->shape[d] > 1;
    grp.staging = memory_.allocate_floats(grp.input->elements());
    s.groups.push_back(grp);
  }
}

StepContext Engine::context(StepState& s, int iteration) {
  StepContext ctx{backend_, comm_,     memory_,       program_, *s.step,
                  *s.node,  iteration, sources_.seed, training_};
  ctx.batch_offset = sources_.batch_offset;
  ctx.global_batch = sources_.global_batch;
  ctx.expert_copies = expert_copies_;
  return ctx;
}

}  // namespace unity::executor::detail
