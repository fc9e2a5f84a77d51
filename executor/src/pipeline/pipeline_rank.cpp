#include "pipeline_rank.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

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

}  // namespace

std::unique_ptr<PipelineRank> make_pipeline_rank(const Plan& plan, const Graph& model, int rank,
                                                 DeviceBackend& backend, std::uint64_t seed) {
  const PipelinePlan& pp = *plan.pipeline;
  auto r = std::make_unique<PipelineRank>();
  r->plan = &pp;
  r->rank = rank;
  r->stages = pp.pipeline_stages;
  r->copies = pp.data_parallel;
  r->micro_batches = pp.micro_batches;
  r->interleave = pp.interleave;
  r->micro_batch_size = pp.micro_batch_size;
  r->recompute = pp.recompute == Recompute::Full;
  r->zero = r->copies > 1 ? pp.zero_stage : 0;
  const PipelinePosition pos = pipeline_position(pp, rank);
  r->stage = pos.stage;
  r->copy = pos.copy;
  for (int c = 0; c < r->copies; ++c) r->copy_group.push_back(r->world_rank(r->stage, c));
  r->local_comm = make_local_communicator();
  r->memory = std::make_unique<DeviceMemory>(backend);

  const SegmentChain chain = segment_chain(model);
  const int chunks = r->stages * r->interleave;
  std::map<std::string, int> weight_chunk;
  for (int c = 0; c < chunks; ++c) {
    const StagePlan& sp = pp.chunks[c];
    ChunkInfo info;
    info.graph = chunk_graph(model, chain, sp.first_segment, sp.last_segment, r->micro_batch_size);
    info.owner = r->world_rank(c % r->stages, 0);
    for (const auto& [id, n] : info.graph.graph.nodes()) {
      if (n.op.type != OpType::Weight) continue;
      const auto [it, fresh] = weight_chunk.emplace(n.op.name, c);
      if (!fresh)
        throw LoweringError(fmt::format(
            "weight '{}' is read by pipeline chunks {} and {}: the executor cannot share (tie) a "
            "weight across stages",
            n.op.name, it->second, c));
      info.weights.push_back({n.op.name, n.outputs.at(0).num_elements()});
    }
    r->chunks.push_back(std::move(info));
  }

  r->schedule = pipeline_schedule(r->stage, r->stages, r->micro_batches, r->interleave);
  std::vector<int> slots_needed;
  r->slot = assign_slots(r->schedule, r->interleave, slots_needed);

  // Inputs of the whole model, by name: a chunk's copy holds rows of it.
  std::map<std::string, std::vector<std::int64_t>> model_inputs;
  for (const auto& [id, n] : model.nodes())
    if (n.op.type == OpType::Input) model_inputs[n.op.name] = n.outputs.at(0).sizes();

  for (int j = 0; j < r->interleave; ++j) {
    const int c = model_chunk(r->stage, j, r->stages);
    const ChunkGraph& cg = r->chunks[c].graph;
    LocalChunk lc;
    lc.model_chunk = c;
    LoweringOptions lo;
    lo.require_loss = c + 1 == chunks;
    if (cg.input >= 0) lo.inputs_with_gradients = {cg.input};
    lc.program =
        std::make_unique<Program>(lower_plan(cg.graph, single_device_views(cg.graph), 1, lo));
    SourceValues sources;
    sources.seed = seed;
    sources.global_batch = model.batch_size;
    for (const auto& [id, n] : cg.graph.nodes()) {
      if (n.op.type != OpType::Input || id == cg.input) continue;
      auto it = model_inputs.find(n.op.name);
      if (it != model_inputs.end() && !it->second.empty() && it->second[0] == model.batch_size &&
          n.outputs.at(0).sizes().at(0) == r->micro_batch_size)
        sources.global_sizes[id] = it->second;
    }
    const int engines = r->recompute ? 1 : slots_needed[j];
    for (int e = 0; e < engines; ++e)
      lc.engines.push_back(std::make_unique<Engine>(*lc.program, backend, *r->local_comm, sources,
                                                    nullptr, true,
                                                    e == 0 ? nullptr : lc.engines[0].get()));
    if (cg.input >= 0)
      lc.input_bytes =
          static_cast<std::size_t>(cg.graph.node(cg.input).outputs.at(0).num_elements()) * 4;
    if (cg.output.node >= 0)
      lc.output_bytes = static_cast<std::size_t>(cg.graph.shape(cg.output).num_elements()) * 4;
    if (r->recompute && lc.input_bytes > 0)
      for (int s = 0; s < slots_needed[j]; ++s)
        lc.stash.push_back(r->memory->allocate(lc.input_bytes));
    lc.weights = lc.engines[0]->weight_slots();
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
