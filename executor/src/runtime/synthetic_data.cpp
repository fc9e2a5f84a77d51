#include "synthetic_data.h"

#include <cmath>

namespace unity::executor::detail {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit(std::uint64_t key, std::int64_t index) {
  const std::uint64_t h = mix(key ^ mix(static_cast<std::uint64_t>(index) + 0x632be59bd9b4e019ULL));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

// The first compute operator reading `source` (through parallel operators and shape-only ones),
// and which of its inputs the data is.
std::pair<const Node*, int> first_reader(const Graph& g, NodeId source) {
  std::vector<NodeId> frontier{source};
  while (!frontier.empty()) {
    const NodeId id = frontier.front();
    frontier.erase(frontier.begin());
    for (const auto& use : g.uses(id)) {
      const Node& n = g.node(use.node);
      const OpType t = n.op.type;
      if (is_parallel_op(t) || t == OpType::Reshape || t == OpType::Flatten ||
          t == OpType::Identity) {
        frontier.push_back(n.id);
        continue;
      }
      return {&n, use.slot};
    }
  }
  return {nullptr, 0};
}

double extent_product(const std::vector<std::int64_t>& v, std::size_t from, std::size_t to) {
  double p = 1;
  for (std::size_t i = from; i < to && i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

template <typename F>
void for_region(const std::vector<std::int64_t>& sizes, const Region& r, F f) {
  const int rank = r.rank();
  std::vector<std::int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * sizes[d + 1];
  const std::int64_t total = r.num_elements();
  std::vector<std::int64_t> at = r.begin;
  std::int64_t global = 0;
  for (int d = 0; d < rank; ++d) global += at[d] * stride[d];
  for (std::int64_t i = 0; i < total; ++i) {
    f(i, global);
    for (int d = rank - 1; d >= 0; --d) {
      ++at[d];
      global += stride[d];
      if (at[d] < r.end[d]) break;
      global -= stride[d] * (at[d] - r.begin[d]);
      at[d] = r.begin[d];
    }
  }
}

}  // namespace

std::uint64_t hash_string(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return mix(h);
}

std::uint64_t hash_combine(std::uint64_t a, std::uint64_t b) { return mix(a ^ mix(b)); }

SourceRole source_role(const Graph& g, NodeId source, std::uint64_t seed) {
  const Node& src = g.node(source);
  SourceRole role;
  role.key = hash_combine(
      seed, hash_string(src.op.name.empty() ? "node " + std::to_string(source) : src.op.name));
  const auto sizes = src.outputs.at(0).sizes();
  const auto [reader, slot] = first_reader(g, source);
  const bool integer = !is_floating(src.outputs.at(0).dtype);
  if (integer) {
    role.kind = SourceRole::Kind::Integer;
    if (reader && (reader->op.type == OpType::Embedding || reader->op.type == OpType::EmbeddingBag))
      role.range = reader->op.attrs.get_int("num_entries");
    else if (reader && reader->op.type == OpType::SoftmaxCrossEntropy)
      role.range = g.shape(reader->inputs[0]).dims.back().size;
    return role;
  }
  if (src.op.type == OpType::Input) {
    if (reader && reader->op.type == OpType::MSELoss && slot == 1) role.low = 0;
    return role;
  }
  // Weights: bounds as PyTorch's default initialisation (kaiming-uniform with a = sqrt(5) gives
  // 1/sqrt(fan_in)).
  double fan_in = sizes.empty() ? 1 : static_cast<double>(sizes[0]);
  if (reader) {
    const auto& w = g.shape(reader->inputs.at(std::min<std::size_t>(1, reader->inputs.size() - 1)));
    switch (reader->op.type) {
      case OpType::Linear:
      case OpType::MatMul:
      case OpType::BatchMatMul:
        fan_in = static_cast<double>(w.dims[w.rank() - 2 >= 0 ? w.rank() - 2 : 0].size);
        break;
      case OpType::Conv2D:
      case OpType::ConvTranspose:
        // [O, C/groups, kernel...] or [C, O/groups, kernel...]: PyTorch's fan-in either way.
        fan_in = extent_product(w.sizes(), 1, w.sizes().size());
        break;
      case OpType::MultiHeadAttention:
        // The projection's own input features (inputs 1 and 2 are the keys and values, whose
        // first dim is the batch: a fan-in from them would make the weights depend on the batch,
        // and a pipeline's micro-batch start from other weights than the whole batch).
        fan_in = sizes.empty() ? 1.0 : static_cast<double>(sizes[0]);
        break;
      case OpType::Embedding:
      case OpType::EmbeddingBag:
        fan_in = static_cast<double>(w.dims[0].size);
        break;
      case OpType::LatentAttention:  // [in, out] projections; the latents' norms start at 1
        if (sizes.size() == 1) {
          role.kind = SourceRole::Kind::Constant;
          role.value = 1.0;
          return role;
        }
        break;
      case OpType::Experts:  // each expert's [in, out] matrix of [E, in, out]
        fan_in = sizes.size() == 3 ? static_cast<double>(sizes[1]) : fan_in;
        break;
      case OpType::BatchNorm:
      case OpType::LayerNorm:
        role.kind = SourceRole::Kind::Constant;
        role.value = slot == 1 ? 1.0 : 0.0;
        return role;
      default:
        role.low = -0.1;
        role.high = 0.1;
        return role;
    }
  }
  const double bound = 1.0 / std::sqrt(std::max(fan_in, 1.0));
  role.low = -bound;
  role.high = bound;
  return role;
}

std::vector<float> synthetic_floats(const SourceRole& role, const std::vector<std::int64_t>& sizes,
                                    const Region& region) {
  std::vector<float> out(static_cast<std::size_t>(region.num_elements()));
  if (role.kind == SourceRole::Kind::Constant) {
    std::fill(out.begin(), out.end(), static_cast<float>(role.value));
    return out;
  }
  for_region(sizes, region, [&](std::int64_t i, std::int64_t global) {
    out[i] = static_cast<float>(role.low + (role.high - role.low) * unit(role.key, global));
  });
  return out;
}

std::vector<std::int64_t> synthetic_integers(const SourceRole& role,
                                             const std::vector<std::int64_t>& sizes,
                                             const Region& region) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(region.num_elements()));
  const std::int64_t range = std::max<std::int64_t>(role.range, 1);
  for_region(sizes, region, [&](std::int64_t i, std::int64_t global) {
    out[i] = static_cast<std::int64_t>(unit(role.key, global) * static_cast<double>(range)) % range;
  });
  return out;
}

}  // namespace unity::executor::detail
