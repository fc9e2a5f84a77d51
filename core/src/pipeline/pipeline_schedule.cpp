#include "unity/core/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

std::vector<PipelineAction> pipeline_schedule(int rank, int stages, int micro_batches,
                                              int interleave) {
  const int p = stages, m = micro_batches, v = interleave;
  if (p < 1 || m < 1 || v < 1 || rank < 0 || rank >= p)
    throw InputError(
        fmt::format("no pipeline schedule for rank {} of {} stages, {} micro-batches", rank, p, m));
  if (v > 1 && (p < 2 || m % p != 0))
    throw InputError(fmt::format(
        "an interleaved schedule ({} chunks per device) needs at least 2 stages and a micro-batch "
        "count the stages divide; got {} stages and {} micro-batches",
        v, p, m));
  const int total = m * v;
  int warmup = 0;
  if (v == 1)
    warmup = std::min(p - rank - 1, m);
  else if (m == p)
    warmup = total;  // every forward first: the steady phase would have nothing to overlap
  else
    warmup = std::min((p - rank - 1) * 2 + (v - 1) * p, total);
  // The k-th forward (backward) pass of this rank: micro-batches go through the chunks in groups
  // of `p`; backwards take the chunks in reverse.
  auto action = [&](int k, bool backward) {
    const int in_group = k % (p * v);
    int chunk = in_group / p;
    if (backward) chunk = v - 1 - chunk;
    return PipelineAction{backward, chunk, (k / (p * v)) * p + in_group % p};
  };
  std::vector<PipelineAction> order;
  order.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) order.push_back(action(k, false));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(action(warmup + i, false));
    order.push_back(action(i, true));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(action(k, true));
  return order;
}

double PipelineTimeline::busy(int rank) const {
  double t = 0;
  for (const auto& b : boxes)
    if (b.rank == rank) t += b.end - b.start;
  return t;
}

double PipelineTimeline::end() const {
  double t = makespan;
  for (const auto& c : comm) t = std::max(t, c.end);
  return t;
}

double timeline_bubble_fraction(const std::vector<TimelineBox>& boxes, int stages) {
  if (boxes.empty()) return 0;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  std::vector<double> busy(static_cast<std::size_t>(std::max(stages, 1)), 0.0);
  for (const auto& b : boxes) {
    first = std::min(first, b.start);
    last = std::max(last, b.end);
    if (b.rank >= 0 && b.rank < stages) busy[b.rank] += b.end - b.start;
  }
  const double busiest = *std::max_element(busy.begin(), busy.end());
  return busiest > 0 ? std::max(0.0, (last - first - busiest) / busiest) : 0;
}

PipelineTimeline simulate_pipeline(const std::vector<double>& chunk_forward,
                                   const std::vector<double>& chunk_backward, int stages,
                                   int micro_batches, int interleave) {
  const int p = stages, m = micro_batches, v = interleave;
  const int chunks = p * v;
  if (static_cast<int>(chunk_forward.size()) != chunks ||
      static_cast<int>(chunk_backward.size()) != chunks)
    throw InputError(
        fmt::format("a pipeline of {} stages x {} chunks needs {} chunk times", p, v, chunks));
  PipelineTimeline t;
  t.stages = p;
  t.micro_batches = m;
  t.interleave = v;
  std::vector<std::vector<PipelineAction>> order(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) order[r] = pipeline_schedule(r, p, m, v);
  // End time of each pass (-1: not run yet), by [backward][model chunk][micro-batch].
  std::vector<double> done(static_cast<std::size_t>(2 * chunks * m), -1.0);
  auto end_of = [&](bool backward, int chunk, int mb) -> double& {
    return done[(static_cast<std::size_t>(backward) * chunks + chunk) * m + mb];
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> free_at(static_cast<std::size_t>(p), 0.0);
  std::size_t left = 0;
  for (const auto& o : order) left += o.size();
  while (left > 0) {
    bool progressed = false;
    for (int r = 0; r < p; ++r) {
      while (next[r] < order[r].size()) {
        const PipelineAction& a = order[r][next[r]];
        const int c = model_chunk(r, a.chunk, p);
        double ready = free_at[r];
        if (!a.backward && c > 0) ready = std::max(ready, end_of(false, c - 1, a.micro_batch));
        if (a.backward && c + 1 < chunks)
          ready = std::max(ready, end_of(true, c + 1, a.micro_batch));
        if (a.backward && c + 1 == chunks) ready = std::max(ready, end_of(false, c, a.micro_batch));
        const bool blocked =
            (!a.backward && c > 0 && end_of(false, c - 1, a.micro_batch) < 0) ||
            (a.backward && c + 1 < chunks && end_of(true, c + 1, a.micro_batch) < 0);
        if (blocked) break;
        const double duration = a.backward ? chunk_backward[c] : chunk_forward[c];
        TimelineBox b{r, c, a.micro_batch, a.backward, ready, ready + duration};
        end_of(a.backward, c, a.micro_batch) = b.end;
        free_at[r] = b.end;
        t.boxes.push_back(b);
        ++next[r];
        --left;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocks");
  }
  for (const auto& b : t.boxes) t.makespan = std::max(t.makespan, b.end);
  t.bubble_fraction = timeline_bubble_fraction(t.boxes, p);
  return t;
}

std::vector<std::string> stage_labels(const PipelinePlan& plan) {
  const int p = std::max(1, plan.pipeline_stages);
  std::vector<std::vector<std::pair<int, int>>> ranges(static_cast<std::size_t>(p));
  std::vector<bool> first(static_cast<std::size_t>(p), false), last = first;
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const StagePlan& c = plan.chunks[i];
    const std::size_t r = static_cast<std::size_t>(c.rank) % ranges.size();
    ranges[r].push_back({c.first_layer, c.last_layer});
    if (i == 0) first[r] = true;
    if (i + 1 == plan.chunks.size()) last[r] = true;
  }
  std::vector<std::string> labels;
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    auto& rs = ranges[r];
    std::sort(rs.begin(), rs.end());
    std::vector<std::pair<int, int>> merged;
    for (const auto& x : rs)
      if (!merged.empty() && x.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, x.second);
      else
        merged.push_back(x);
    std::string layers;
    for (const auto& [a, b] : merged)
      layers += (layers.empty() ? "" : ", ") +
                (a == b ? fmt::format("layer {}", a) : fmt::format("layers {}-{}", a, b));
    std::string label = first[r] ? "embedding + " + layers : layers;
    if (last[r]) label += " + head";
    labels.push_back(std::move(label));
  }
  return labels;
}

PipelineTimeline predicted_timeline(const PipelinePlan& plan) {
  const int p = plan.pipeline_stages, v = plan.interleave;
  const std::size_t chunks = static_cast<std::size_t>(p * v);
  std::vector<double> forward(chunks, 0.0), backward = forward, hidden = forward;
  // The sends behind compute where the planner put them (pipeline_cost.h).
  const bool overlap_p2p = sends_overlap_compute(v, plan.overlap_grad_reduce);
  // plan.chunks are in model order; chunk i runs on pipeline rank i mod p.
  for (std::size_t i = 0; i < plan.chunks.size() && i < chunks; ++i) {
    const StagePlan& c = plan.chunks[i];
    const double exposed = exposed_sends(c.p2p, c.forward + c.backward, overlap_p2p);
    forward[i] = c.forward + exposed / 2;
    backward[i] = c.backward + exposed / 2;
    hidden[i] = (c.p2p - exposed) / 2;  // per pass
  }
  PipelineTimeline t = simulate_pipeline(forward, backward, p, plan.micro_batches, v);
  t.stage_labels = stage_labels(plan);
  // Each pass: its compute, then the sends it waits for; the hidden ones beside the compute. The
  // bubble fraction stays the schedule's, whose work counts the exposed sends (pipeline_time()).
  std::vector<double> last_backward(static_cast<std::size_t>(p), 0.0);
  for (TimelineBox& b : t.boxes) {
    const std::size_t c = static_cast<std::size_t>(b.chunk);
    if (c >= plan.chunks.size()) continue;
    const StagePlan& chunk = plan.chunks[c];
    const auto in_pass = [&b](const PassSeconds& s) { return b.backward ? s.backward : s.forward; };
    const double alltoall = in_pass(chunk.exchanges.alltoall);
    const double alltoall_exposed = std::min(alltoall, in_pass(chunk.exchanges.alltoall_exposed));
    const double kv = in_pass(chunk.exchanges.context_exchange);
    const double pass = b.backward ? chunk.backward : chunk.forward;
    const double compute = std::max(0.0, pass - alltoall_exposed - kv);
    const double pass_end = b.end;
    b.end = std::min(pass_end, b.start + compute);
    if (hidden[c] > 0)
      t.comm.push_back({b.rank, kCommP2p, b.start, b.start + std::min(hidden[c], compute), false});
    // Dispatch then combine forward; backward, the combine's gradients go first.
    const auto alltoalls = [&](double from, double seconds, bool exposed) {
      const char* first = b.backward ? kCommCombine : kCommDispatch;
      const char* second = b.backward ? kCommDispatch : kCommCombine;
      t.comm.push_back({b.rank, first, from, from + seconds / 2, exposed});
      t.comm.push_back({b.rank, second, from + seconds / 2, from + seconds, exposed});
    };
    if (alltoall - alltoall_exposed > 1e-15)
      alltoalls(b.start, std::min(alltoall - alltoall_exposed, compute), false);
    double at = b.end;
    if (alltoall_exposed > 0) {
      alltoalls(at, std::min(alltoall_exposed, pass_end - at), true);
      at = std::min(pass_end, at + alltoall_exposed);
    }
    if (kv > 0) {
      t.comm.push_back({b.rank, kCommContextExchange, at, std::min(pass_end, at + kv), true});
      at = std::min(pass_end, at + kv);
    }
    if (pass_end - at > 1e-15) t.comm.push_back({b.rank, kCommP2p, at, pass_end, true});
    if (b.backward)
      last_backward[static_cast<std::size_t>(b.rank)] =
          std::max(last_backward[static_cast<std::size_t>(b.rank)], b.end);
  }
  // Once an iteration, per rank: the gradient synchronisation, its hidden part behind the last
  // backward passes and its exposed part after the flush, then the optimizer step once the slowest
  // rank's synchronisation is done. Plans without per-rank figures: all of sync_time exposed.
  const double sync_end = t.makespan + plan.sync_time;
  for (int r = 0; r < p; ++r) {
    const std::size_t i = static_cast<std::size_t>(r);
    const double exposed =
        i < plan.rank_sync_exposed.size() ? plan.rank_sync_exposed[i] : plan.sync_time;
    const double total = i < plan.rank_sync_total.size() ? plan.rank_sync_total[i] : exposed;
    const double behind = std::min(std::max(0.0, total - exposed), last_backward[i]);
    if (behind > 0)
      t.comm.push_back({r, kCommGradientSync, last_backward[i] - behind, last_backward[i], false});
    if (exposed > 0)
      t.comm.push_back({r, kCommGradientSync, t.makespan, t.makespan + exposed, true});
    if (plan.update_time > 0)
      t.comm.push_back({r, kCommOptimizerStep, sync_end, sync_end + plan.update_time, true});
  }
  std::stable_sort(t.comm.begin(), t.comm.end(), [](const CommBox& a, const CommBox& b) {
    return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
  });
  return t;
}

nlohmann::json timeline_to_json(const PipelineTimeline& t) {
  nlohmann::json boxes = nlohmann::json::array();
  for (const auto& b : t.boxes)
    boxes.push_back({{"stage", b.rank},
                     {"chunk", b.chunk},
                     {"micro_batch", b.micro_batch},
                     {"pass", b.backward ? "backward" : "forward"},
                     {"start_ms", b.start * 1e3},
                     {"end_ms", b.end * 1e3}});
  nlohmann::json comm = nlohmann::json::array();
  for (const auto& c : t.comm)
    comm.push_back({{"stage", c.rank},
                    {"kind", c.kind},
                    {"start_ms", c.start * 1e3},
                    {"end_ms", c.end * 1e3},
                    {"exposed", c.exposed}});
  return {{"stages", t.stages},
          {"micro_batches", t.micro_batches},
          {"interleave", t.interleave},
          {"stage_labels", t.stage_labels},
          {"makespan_ms", t.makespan * 1e3},
          {"bubble_fraction", t.bubble_fraction},
          {"measured", t.measured},
          {"boxes", boxes},
          {"comm", comm}};
}

PipelineTimeline timeline_from_json(const nlohmann::json& j) {
  try {
    PipelineTimeline t;
    t.stages = j.at("stages").get<int>();
    t.micro_batches = j.at("micro_batches").get<int>();
    t.interleave = j.value("interleave", 1);
    t.stage_labels = j.value("stage_labels", std::vector<std::string>{});
    t.makespan = j.value("makespan_ms", 0.0) / 1e3;
    t.bubble_fraction = j.value("bubble_fraction", 0.0);
    t.measured = j.value("measured", false);
    for (const auto& b : j.at("boxes")) {
      TimelineBox x;
      x.rank = b.at("stage").get<int>();
      x.chunk = b.value("chunk", x.rank);
      x.micro_batch = b.at("micro_batch").get<int>();
      x.backward = b.at("pass").get<std::string>() == "backward";
      x.start = b.at("start_ms").get<double>() / 1e3;
      x.end = b.at("end_ms").get<double>() / 1e3;
      if (x.rank < 0 || x.rank >= t.stages || x.end < x.start)
        throw InputError(fmt::format("timeline box of stage {} is invalid", x.rank));
      t.boxes.push_back(x);
    }
    if (j.contains("comm"))  // optional: older timelines and measured ones have none
      for (const auto& c : j.at("comm")) {
        CommBox x;
        x.rank = c.at("stage").get<int>();
        x.kind = c.at("kind").get<std::string>();
        x.start = c.at("start_ms").get<double>() / 1e3;
        x.end = c.at("end_ms").get<double>() / 1e3;
        x.exposed = c.value("exposed", true);
        if (x.rank < 0 || x.rank >= t.stages || x.end < x.start)
          throw InputError(fmt::format("timeline communication of stage {} is invalid", x.rank));
        t.comm.push_back(std::move(x));
      }
    return t;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("pipeline timeline: ") + e.what());
  }
}

nlohmann::json chrome_trace(const PipelineTimeline& t, const std::string& title) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", title}}}});
  for (int r = 0; r < t.stages; ++r) {
    std::string name = fmt::format("stage {}", r);
    if (r < static_cast<int>(t.stage_labels.size()) && !t.stage_labels[r].empty())
      name += " (" + t.stage_labels[r] + ")";
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", 2 * r}}}});
  }
  // Each rank's communication on a thread of its own, sorted under the rank's compute.
  std::vector<bool> talks(static_cast<std::size_t>(std::max(t.stages, 0)), false);
  for (const auto& c : t.comm)
    if (c.rank >= 0 && c.rank < t.stages) talks[static_cast<std::size_t>(c.rank)] = true;
  for (int r = 0; r < t.stages; ++r) {
    if (!talks[static_cast<std::size_t>(r)]) continue;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", t.stages + r},
                      {"args", {{"name", fmt::format("rank {} communication", r)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", t.stages + r},
                      {"args", {{"sort_index", 2 * r + 1}}}});
  }
  for (const auto& b : t.boxes)
    events.push_back({{"name", fmt::format("{}{}", b.backward ? 'B' : 'F', b.micro_batch)},
                      {"cat", b.backward ? "backward" : "forward"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", b.rank},
                      {"ts", b.start * 1e6},
                      {"dur", (b.end - b.start) * 1e6},
                      {"cname", b.backward ? "thread_state_iowait" : "thread_state_running"},
                      {"args", {{"micro_batch", b.micro_batch}, {"model_chunk", b.chunk}}}});
  for (const auto& c : t.comm) {
    if (c.rank < 0 || c.rank >= t.stages) continue;
    const bool step = c.kind == kCommOptimizerStep;
    events.push_back({{"name", c.kind},
                      {"cat", step ? "optimizer" : "communication"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", t.stages + c.rank},
                      {"ts", c.start * 1e6},
                      {"dur", (c.end - c.start) * 1e6},
                      {"cname", step        ? "generic_work"
                                : c.exposed ? "terrible"
                                            : "good"},
                      {"args", {{"exposed", c.exposed}}}});
  }
  events.push_back({{"name", "iteration end"},
                    {"ph", "i"},
                    {"s", "p"},
                    {"pid", 0},
                    {"tid", 0},
                    {"ts", t.end() * 1e6}});
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"title", title},
            {"stages", t.stages},
            {"micro_batches", t.micro_batches},
            {"interleave", t.interleave},
            {"bubble_fraction", t.bubble_fraction},
            {"makespan_ms", t.makespan * 1e3},
            {"iteration_ms", t.end() * 1e3},
            {"measured", t.measured}}}};
}

}  // namespace unity
