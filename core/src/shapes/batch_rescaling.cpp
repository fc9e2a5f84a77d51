#include "unity/core/shapes/batch_rescaling.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {
namespace {

std::int64_t product(const std::vector<std::int64_t>& v, int begin, int end) {
  std::int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= v[static_cast<std::size_t>(i)];
  return p;
}

[[noreturn]] void unfit(const Operator& op, const std::string& why) {
  throw ShapeError(fmt::format("'{}' ({}) holds sizes of the batch it was imported with: {}",
                               op.name, to_string(op.type), why));
}

// Each input dim whose size changed (the batch, or the batch merged outermost with other dims)
// ends a block of elements at the same place in the output as the output dim that holds it: the
// outermost output dim whose block ends there takes the change. Size-1 dims make the groups of a
// reshape ambiguous ([8, 1, 32] -> [8, 4, 8]); where a block ends is not.
void rebatch_reshape(Operator& op, const std::vector<std::int64_t>& before,
                     const std::vector<std::int64_t>& now) {
  std::vector<std::int64_t> target = op.attrs.get_ints("shape");
  const int rank = static_cast<int>(target.size());
  for (int c = 0; c < static_cast<int>(before.size()); ++c) {
    const auto was = before[static_cast<std::size_t>(c)], is = now[static_cast<std::size_t>(c)];
    if (was == is) continue;
    const std::int64_t end = product(before, c, static_cast<int>(before.size()));
    int holder = -1;
    for (int o = 0; o < rank && holder < 0; ++o)
      if (product(target, o, rank) == end && target[static_cast<std::size_t>(o)] * is % was == 0)
        holder = o;
    if (holder < 0)
      unfit(op, fmt::format("no dim of [{}] holds dim {} of [{}]", fmt::join(target, ", "), c,
                            fmt::join(before, ", ")));
    auto& size = target[static_cast<std::size_t>(holder)];
    size = size * is / was;
  }
  op.attrs.set("shape", target);
}

}  // namespace

Operator rebatched_operator(const Operator& op, const std::vector<ParallelTensorShape>& before,
                            const std::vector<ParallelTensorShape>& now) {
  bool changed = false;
  for (std::size_t i = 0; i < before.size() && i < now.size(); ++i)
    changed = changed || before[i].sizes() != now[i].sizes();
  if (!changed || before.empty()) return op;
  Operator out = op;
  const std::vector<std::int64_t> was = before[0].sizes(), is = now[0].sizes();
  switch (op.type) {
    case OpType::Reshape:
      rebatch_reshape(out, was, is);
      break;
    case OpType::Expand: {
      // A dim the input holds (not broadcast from 1) follows the input.
      std::vector<std::int64_t> target = op.attrs.get_ints("shape");
      const std::size_t offset = target.size() - was.size();
      for (std::size_t d = 0; d < was.size(); ++d)
        if (was[d] != is[d] && target[d + offset] == was[d]) target[d + offset] = is[d];
      out.attrs.set("shape", target);
      break;
    }
    case OpType::Split: {
      const auto rank = static_cast<std::int64_t>(was.size());
      std::int64_t axis = op.attrs.get_int("axis");
      if (axis < 0) axis += rank;
      const auto a = static_cast<std::size_t>(axis);
      if (was[a] == is[a]) break;
      std::vector<std::int64_t> sizes = op.attrs.get_ints("sizes");
      for (auto& s : sizes) {
        if (s * is[a] % was[a] != 0)
          unfit(op, fmt::format("its split of {} does not scale to {}", was[a], is[a]));
        s = s * is[a] / was[a];
      }
      out.attrs.set("sizes", sizes);
      break;
    }
    case OpType::Resize: {
      // An axis resized to its own size (the identity) keeps following the input.
      const auto axes = op.attrs.get_ints("axes");
      std::vector<std::int64_t> sizes = op.attrs.get_ints("sizes");
      for (std::size_t i = 0; i < axes.size() && i < sizes.size(); ++i) {
        const auto a = static_cast<std::size_t>(axes[i]);
        if (a < was.size() && was[a] != is[a] && sizes[i] == was[a]) sizes[i] = is[a];
      }
      out.attrs.set("sizes", sizes);
      break;
    }
    default:
      break;
  }
  return out;
}

}  // namespace unity
