#include "pipeline_rank.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "unity/core/pipeline/context_parallel_plan.h"
#include "unity/core/pipeline/segment_outputs.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/pipeline_training.h"

namespace unity::executor::detail {
namespace {

// Slot of each (chunk, micro-batch) in flight: the lowest free one when its forward starts, freed
// by its backward. The number of slots is the most micro-batches a chunk holds at once.
std::map<std::pair<int, int>, int> assign_slots(const std::vector<PipelineAction>& schedule,
                                                int chunks, std::vector<int>& slots_needed) {
  std::map<std::pair<int, int>, int> slot;
  std::vector<std::set<int>> busy(static_cast<std::size_t>(chunks));
  slots_needed.assign(static_cast<std::size_t>(chunks), 1);
  for (const auto& a : schedule) {
    auto& used = busy[a.chunk];
    if (!a.backward) {
      int s = 0;
      while (used.count(s)) ++s;
      used.insert(s);
      slot[{a.chunk, a.micro_batch}] = s;
      slots_needed[a.chunk] = std::max(slots_needed[a.chunk], s + 1);
    } else {
      used.erase(slot.at({a.chunk, a.micro_batch}));
    }
  }
  return slot;
}

// Replica ranks whose tasks read Input `input`, and the region each reads: the whole input, or
// one box of it (a sequence shard's rows under context parallelism; the bounding box of the
// overlapping windows a split convolution reads, which the engine keeps in one slot).
void find_readers(const Program& p, NodeId input, Piece& piece) {
  std::map<int, Region> regions;
  for (const auto& step : p.steps)
    for (const auto& task : step.tasks)
      for (const auto& req : task.inputs) {
        const TensorInfo& t = p.tensor(req.tensor);
        if (t.origin != TensorOrigin::Input || t.root != input) continue;
        auto [it, fresh] = regions.emplace(task.rank, req.region);
        if (!fresh) it->second = bounding_box(it->second, req.region);
      }
  for (const auto& [rank, region] : regions) {
    piece.readers.push_back(rank);
    piece.reader_regions.push_back(region);
  }
}

// The replica rank and piece holding the whole first copy of `t`.
std::pair<int, int> whole_holder(const Program& p, TensorRef t) {
  const TensorInfo& info = p.tensor(t);
  for (int i = 0; i < static_cast<int>(info.piece_rank.size()); ++i) {
    if (info.layout.copy_key(piece_index(info.shape, i).replica) != 0) continue;
    if (piece_region(info.shape, i).num_elements() == info.shape.num_elements())
      return {info.piece_rank[i], i};
  }
  throw LoweringError(fmt::format(
      "{}: the activation a pipeline stage hands on is split over the replica's devices; the "
      "executor needs one device to hold it whole",
      p.graph.describe(t.node)));
}

Piece make_piece(Graph graph, NodeId input, TensorRef output, bool final, int devices,
                 const std::map<NodeId, MachineView>* views, int replica_rank) {
  Piece piece;
  LoweringOptions lo;
  lo.require_loss = final;
  if (input >= 0) lo.inputs_with_gradients = {input};
  const auto single = views ? std::map<NodeId, MachineView>{} : single_device_views(graph);
  piece.program =
      std::make_unique<Program>(lower_plan(graph, views ? *views : single, devices, lo));
  piece.input = input;
  piece.output = output;
  const Graph& g = piece.program->graph;
  if (input >= 0) {
    find_readers(*piece.program, input, piece);
    piece.input_region = full_region(g.node(input).outputs.at(0).sizes());
    piece.input_elem_size = held_element_size(g.node(input).outputs.at(0).dtype);
    const auto elem = static_cast<std::size_t>(piece.input_elem_size);
    piece.input_bytes = static_cast<std::size_t>(piece.input_region.num_elements()) * elem;
    for (std::size_t i = 0; i < piece.readers.size(); ++i)
      if (piece.readers[i] == replica_rank)
        piece.read_bytes = static_cast<std::size_t>(piece.reader_regions[i].num_elements()) * elem;
  }
  if (output.node >= 0) {
    std::tie(piece.holder, piece.holder_piece) = whole_holder(*piece.program, output);
    piece.output_elem_size = held_element_size(g.shape(output).dtype);
    piece.output_needs_gradient = piece.program->tensor(output).requires_grad;
    piece.output_bytes = static_cast<std::size_t>(g.shape(output).num_elements()) *
                         static_cast<std::size_t>(piece.output_elem_size);
  }
  return piece;
}

}  // namespace

SegmentRun segment_run(const PipelinePlan& pp, const Graph& model, const SegmentChain& chain,
                       int seg, std::int64_t micro_batch_size, std::int64_t sequence) {
  SegmentRun run;
  if (pp.tensor_parallel > 1) {
    const SegmentKindPlan& kp = pp.kind_plans.at(chain.segments[seg].kind);
    run.graph = executed_graph(renamed_kind_plan(kp.pcg, model, chain, seg, micro_batch_size));
    run.views = kp.views;
    if (chain.segments[seg].input.node >= 0)
      run.input = model.node(chain.segments[seg].input.node).op.name + ".out";
  } else {
    ChunkGraph cg = chunk_graph(model, chain, seg, seg, micro_batch_size);
    if (cg.input >= 0) run.input = cg.graph.node(cg.input).op.name;
    run.graph = std::move(cg.graph);
    run.views = single_device_views(run.graph);
  }
  if (pp.context_parallel > 1) {
    ContextParallelPlan split = context_parallel_plan(run.graph, run.views, pp.tensor_parallel,
                                                      pp.context_parallel, sequence);
    run.graph = std::move(split.pcg);
    run.views = std::move(split.views);
  }
  return run;
}

std::unique_ptr<PipelineRank> make_pipeline_rank(const Plan& plan, const Graph& model,
                                                 Communicator& world, DeviceBackend& backend,
                                                 std::uint64_t seed) {
  const PipelinePlan& pp = *plan.pipeline;
  auto r = std::make_unique<PipelineRank>();
  r->plan = &pp;
  r->rank = world.rank();
  r->stages = pp.pipeline_stages;
  r->copies = pp.data_parallel;
  r->replica = pp.grid().replica();
  r->micro_batches = pp.micro_batches;
  r->interleave = pp.interleave;
  r->micro_batch_size = pp.micro_batch_size;
  r->recompute = pp.recompute == Recompute::Full;
  r->zero = r->copies > 1 ? pp.zero_stage : 0;
  const PipelinePosition pos = pipeline_position(pp, r->rank);
  r->stage = pos.stage;
  r->copy = pos.copy;
  r->replica_rank = pp.grid().position(r->rank).index;
  for (int c = 0; c < r->copies; ++c)
    r->copy_group.push_back(r->world_rank(r->stage, c, r->replica_rank));
  r->expert_copies.world = &world;
  r->expert_copies.expert_parallel = std::max(1, pp.expert_parallel);
  r->expert_copies.copy_ranks = r->copy_group;
  r->expert_copies.copy = r->copy;
  if (r->replica == 1) {
    r->replica_comm = make_local_communicator();
  } else {
    std::vector<int> members;
    for (int t = 0; t < r->replica; ++t) members.push_back(r->world_rank(r->stage, r->copy, t));
    r->replica_comm = make_group_communicator(world, members);
  }
  r->memory = std::make_unique<DeviceMemory>(backend);

  const SegmentChain chain = segment_chain(model);
  const std::int64_t sequence = attention_sequence(model);  // what context parallelism splits
  const std::vector<bool> repeated = repeated_kinds(chain);
  const int chunks = r->stages * r->interleave;
  const int last_segment = static_cast<int>(chain.segments.size()) - 1;
  std::map<std::string, int> weight_chunk;
  std::vector<ChunkGraph> serial;
  for (int c = 0; c < chunks; ++c) {
    const StagePlan& sp = pp.chunks[c];
    serial.push_back(
        chunk_graph(model, chain, sp.first_segment, sp.last_segment, r->micro_batch_size));
    ChunkInfo info;
    info.owner = r->world_rank(c % r->stages, 0, 0);
    for (const auto& [id, n] : serial.back().graph.nodes()) {
      if (n.op.type != OpType::Weight) continue;
      const auto [it, fresh] = weight_chunk.emplace(n.op.name, c);
      if (!fresh)
        throw LoweringError(fmt::format(
            "weight '{}' is read by pipeline chunks {} and {}: the executor cannot share (tie) a "
            "weight across stages",
            n.op.name, it->second, c));
      info.weights.push_back({n.op.name, n.outputs.at(0).sizes()});
    }
    r->chunks.push_back(std::move(info));
  }

  r->schedule = pipeline_schedule(r->stage, r->stages, r->micro_batches, r->interleave);
  std::vector<int> slots_needed;
  r->slot = assign_slots(r->schedule, r->interleave, slots_needed);

  // Inputs of the whole model, by name: a piece's copy holds rows of it.
  std::map<std::string, std::vector<std::int64_t>> model_inputs;
  for (const auto& [id, n] : model.nodes())
    if (n.op.type == OpType::Input) model_inputs[n.op.name] = n.outputs.at(0).sizes();

  for (int j = 0; j < r->interleave; ++j) {
    const int c = model_chunk(r->stage, j, r->stages);
    const StagePlan& sp = pp.chunks[c];
    LocalChunk lc;
    lc.model_chunk = c;
    if (pp.tensor_parallel > 1 && pp.kind_plans.size() != static_cast<std::size_t>(chain.kinds()))
      throw LoweringError(
          "the plan has no segment plans for its tensor-parallel stages (made by an older "
          "Unity): plan it again");
    for (int seg = sp.first_segment; seg <= sp.last_segment; ++seg) {
      Piece piece;
      if (r->replica == 1) {
        const ChunkGraph cg = chunk_graph(model, chain, seg, seg, r->micro_batch_size);
        piece = make_piece(cg.graph, cg.input, cg.output, seg == last_segment, 1, nullptr, 0);
      } else {
        SegmentRun run = segment_run(pp, model, chain, seg, r->micro_batch_size, sequence);
        Graph g = std::move(run.graph);
        const std::map<NodeId, MachineView> views = std::move(run.views);
        const std::string name = std::move(run.input);
        NodeId input = -1;
        if (!name.empty()) {
          for (const auto& [id, n] : g.nodes())
            if (n.op.type == OpType::Input && n.op.name == name) input = id;
          if (input < 0)
            throw LoweringError(fmt::format("segment {}'s plan has no input '{}'", seg, name));
        }
        TensorRef output{-1, 0};
        if (seg < last_segment) {
          const auto outputs = handed_on_outputs(g, model);
          if (outputs.size() != 1)
            throw LoweringError(
                fmt::format("segment {}'s plan hands on {} outputs, not one", seg, outputs.size()));
          output = outputs.front();
        }
        piece = make_piece(std::move(g), input, output, seg == last_segment, r->replica, &views,
                           r->replica_rank);
      }
      piece.recomputed = r->recompute && repeated[chain.segments[seg].kind] && piece.input >= 0;
      lc.pieces.push_back(std::move(piece));
    }
    std::set<std::string> seen;
    for (const auto& piece : lc.pieces)
      for (const auto& [id, n] : piece.program->graph.nodes())
        if (n.op.type == OpType::Weight && !seen.insert(n.op.name).second)
          throw LoweringError(fmt::format(
              "weight '{}' is read by two segments of a pipeline chunk; the executor cannot "
              "share it between their programs",
              n.op.name));
    for (auto& piece : lc.pieces) {
      SourceValues sources;
      sources.seed = seed;
      sources.global_batch = model.batch_size;
      for (const auto& [id, n] : piece.program->graph.nodes()) {
        if (n.op.type != OpType::Input || id == piece.input) continue;
        auto it = model_inputs.find(n.op.name);
        if (it != model_inputs.end() && !it->second.empty() && it->second[0] == model.batch_size &&
            n.outputs.at(0).sizes().at(0) == r->micro_batch_size)
          sources.global_sizes[id] = it->second;
      }
      const int engines = piece.recomputed ? 1 : slots_needed[j];
      for (int e = 0; e < engines; ++e)
        piece.engines.push_back(
            std::make_unique<Engine>(*piece.program, backend, *r->replica_comm, sources, nullptr,
                                     true, e == 0 ? nullptr : piece.engines[0].get()));
      for (auto& e : piece.engines) e->set_expert_copies(&r->expert_copies);
      for (Slot* w : piece.engines[0]->weight_slots()) lc.weights.push_back(w);
      const bool reads = std::find(piece.readers.begin(), piece.readers.end(), r->replica_rank) !=
                         piece.readers.end();
      if (piece.recomputed && reads)
        for (int s = 0; s < slots_needed[j]; ++s)
          piece.stash.push_back(r->memory->allocate(piece.read_bytes));
    }
    const Piece& first = lc.pieces.front();
    const Piece& last = lc.pieces.back();
    if (r->replica_rank == 0) {
      if (first.input_bytes > 0) lc.input_buffer = r->memory->allocate(first.input_bytes);
      if (first.input_bytes > 0 && r->replica > 1)
        lc.input_scratch = r->memory->allocate(first.input_bytes);
      if (last.output_bytes > 0) lc.output_buffer = r->memory->allocate(last.output_bytes);
    }
    for (const auto& piece : lc.pieces)
      lc.hand_off.push_back(piece.output_bytes > 0 ? r->memory->allocate(piece.output_bytes)
                                                   : nullptr);
    if (r->zero > 0) {
      std::int64_t n = 0;
      for (const Slot* w : lc.weights)
        if (w->grad) n += w->elements();
      lc.shard = (n + r->copies - 1) / r->copies;
      lc.flat = lc.shard * r->copies;
      lc.flat_buffer = r->memory->allocate_floats(lc.flat);
      lc.shard_weights = r->memory->allocate_floats(lc.shard);
      lc.shard_gradients = r->memory->allocate_floats(lc.shard);
      if (r->zero >= 2) lc.shard_incoming = r->memory->allocate_floats(lc.shard);
    }
    r->local.push_back(std::move(lc));
  }
  return r;
}

}  // namespace unity::executor::detail
