#pragma once
// Pad, GatherND and ScatterND arithmetic on row-major buffers, written once for the executor's
// CPU kernels (float values, int64 indices) and the rule evaluator (doubles throughout).
// Backward functions accumulate (+=) into the gradients they are given.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/ops/index_kernels.h"

namespace unity::pad_kernels {

using Dims = std::vector<std::int64_t>;

enum class PadMode { Constant, Reflect, Edge };

using index_kernels::element_count;
using index_kernels::row_strides;

// false when `name` is no mode.
inline bool pad_mode_of(const std::string& name, PadMode& mode) {
  if (name == "constant")
    mode = PadMode::Constant;
  else if (name == "reflect")
    mode = PadMode::Reflect;
  else if (name == "edge")
    mode = PadMode::Edge;
  else
    return false;
  return true;
}

// The output dims: n + begin + end per dim (`pads` in ONNX order, all begins then all ends).
inline Dims pad_output_dims(const Dims& in, const Dims& pads) {
  Dims out(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) out[d] = in[d] + pads[d] + pads[d + in.size()];
  return out;
}

// The input coordinate read for coordinate s = o - begin of an axis of n (numpy's pad: reflect
// mirrors about the edge elements, without repeating them, as often as needed); -1 for the
// constant.
inline std::int64_t pad_source(std::int64_t s, std::int64_t n, PadMode mode) {
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return s < 0 ? 0 : n - 1;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      const std::int64_t period = 2 * (n - 1);
      std::int64_t p = s % period;
      if (p < 0) p += period;
      return p >= n ? period - p : p;
    }
  }
  return -1;
}

// Calls f(o, src) for every output element o, src its input offset or -1 for the constant.
template <typename F>
void for_each_padded(const Dims& in, const Dims& pads, PadMode mode, F&& f) {
  const Dims out = pad_output_dims(in, pads);
  const std::int64_t total = element_count(out);
  if (total == 0) return;
  const Dims is = row_strides(in);
  const int rank = static_cast<int>(in.size());
  std::vector<Dims> src(rank);  // per dim, per output coordinate: the input coordinate
  for (int d = 0; d < rank; ++d) {
    src[d].resize(static_cast<std::size_t>(out[d]));
    for (std::int64_t o = 0; o < out[d]; ++o) src[d][o] = pad_source(o - pads[d], in[d], mode);
  }
  Dims index(rank, 0);
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t off = 0;
    for (int d = 0; d < rank && off >= 0; ++d) {
      const std::int64_t s = src[d][index[d]];
      off = s < 0 ? -1 : off + s * is[d];
    }
    f(i, off);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
}

template <typename T>
void pad(const T* x, const Dims& in, const Dims& pads, PadMode mode, T value, T* y) {
  for_each_padded(in, pads, mode,
                  [&](std::int64_t o, std::int64_t s) { y[o] = s < 0 ? value : x[s]; });
}

// The adjoint: dx[src] += dy[o] (the constant's positions drop out).
template <typename T>
void pad_backward(const T* dy, const Dims& in, const Dims& pads, PadMode mode, T* dx) {
  for_each_padded(in, pads, mode, [&](std::int64_t o, std::int64_t s) {
    if (s >= 0) dx[s] += dy[o];
  });
}

// GatherND / ScatterND addressing. data [B..., K..., S...] (b batch dims, k indexed dims, the
// slice dims S), indices [B..., J..., k]. For each (batch, tuple) in row-major order of the
// indices' dims but the last, the data offset of its slice, or -1 for an index outside [-n, n).
struct NdLayout {
  std::int64_t tuples = 0;  // element_count(indices dims but the last)
  std::int64_t slice = 1;   // element_count(S)
  std::vector<std::int64_t> offsets;
  bool ok = true;
};

template <typename I>
NdLayout nd_layout(const Dims& data, const I* idx, const Dims& idx_dims, int batch_dims) {
  NdLayout L;
  const int k = static_cast<int>(idx_dims.back());
  const Dims ds = row_strides(data);
  for (std::size_t d = static_cast<std::size_t>(batch_dims + k); d < data.size(); ++d)
    L.slice *= data[d];
  std::int64_t batches = 1;
  for (int d = 0; d < batch_dims; ++d) batches *= idx_dims[d];
  L.tuples = element_count(Dims(idx_dims.begin(), idx_dims.end() - 1));
  const std::int64_t per_batch = batches == 0 ? 0 : L.tuples / batches;
  const std::int64_t batch_stride = batch_dims > 0 ? ds[batch_dims - 1] : 0;
  L.offsets.resize(static_cast<std::size_t>(L.tuples));
  for (std::int64_t t = 0; t < L.tuples; ++t) {
    const std::int64_t g = per_batch == 0 ? 0 : t / per_batch;
    std::int64_t off = g * batch_stride;
    for (int j = 0; j < k; ++j) {
      auto p = static_cast<std::int64_t>(idx[t * k + j]);
      const std::int64_t n = data[batch_dims + j];
      if (p < 0) p += n;
      if (p < 0 || p >= n) {
        off = -1;
        L.ok = false;
        break;
      }
      off += p * ds[batch_dims + j];
    }
    L.offsets[static_cast<std::size_t>(t)] = off;
  }
  return L;
}

// y[t, s] = data[offset(t) + s].
template <typename T>
void gather_nd(const T* data, const NdLayout& L, T* y) {
  for (std::int64_t t = 0; t < L.tuples; ++t) {
    const std::int64_t o = L.offsets[static_cast<std::size_t>(t)];
    for (std::int64_t s = 0; s < L.slice; ++s) y[t * L.slice + s] = o < 0 ? T(0) : data[o + s];
  }
}

// d(data)[offset(t) + s] += dy[t, s].
template <typename T>
void gather_nd_backward(const T* dy, const NdLayout& L, T* ddata) {
  for (std::int64_t t = 0; t < L.tuples; ++t) {
    const std::int64_t o = L.offsets[static_cast<std::size_t>(t)];
    if (o >= 0)
      for (std::int64_t s = 0; s < L.slice; ++s) ddata[o + s] += dy[t * L.slice + s];
  }
}

enum class ScatterReduction { None, Add, Mul };

// false when `name` is no reduction ScatterND takes here ("max" and "min" are not).
inline bool scatter_reduction_of(const std::string& name, ScatterReduction& r) {
  if (name == "none")
    r = ScatterReduction::None;
  else if (name == "add")
    r = ScatterReduction::Add;
  else if (name == "mul")
    r = ScatterReduction::Mul;
  else
    return false;
  return true;
}

// y = data with the updates' slices written (add: added, mul: multiplied) in order at their
// offsets.
template <typename T>
void scatter_nd(const T* data, std::int64_t data_elems, const T* upd, const NdLayout& L,
                ScatterReduction red, T* y) {
  for (std::int64_t i = 0; i < data_elems; ++i) y[i] = data[i];
  for (std::int64_t t = 0; t < L.tuples; ++t) {
    const std::int64_t o = L.offsets[static_cast<std::size_t>(t)];
    if (o < 0) continue;
    for (std::int64_t s = 0; s < L.slice; ++s) {
      const T u = upd[t * L.slice + s];
      T& v = y[o + s];
      v = red == ScatterReduction::Add ? v + u : red == ScatterReduction::Mul ? v * u : u;
    }
  }
}

// The adjoint. none: d(data) += dy less the positions written, d(updates) += dy at them (only a
// position's last write reaches y). add: d(data) += dy, d(updates) += dy gathered. mul (y = data
// times every update written there): d(data) += dy times those updates, d(update) += dy times
// data and the other updates. `data` and `upd` are read only for mul.
template <typename T>
void scatter_nd_backward(const T* dy, const T* data, const T* upd, std::int64_t data_elems,
                         const NdLayout& L, ScatterReduction red, T* ddata, T* dupd) {
  // Which tuples wrote each position, in order.
  std::vector<std::vector<std::int64_t>> writers(static_cast<std::size_t>(data_elems));
  for (std::int64_t t = 0; t < L.tuples; ++t) {
    const std::int64_t o = L.offsets[static_cast<std::size_t>(t)];
    if (o >= 0)
      for (std::int64_t s = 0; s < L.slice; ++s)
        writers[static_cast<std::size_t>(o + s)].push_back(t);
  }
  for (std::int64_t p = 0; p < data_elems; ++p) {
    const auto& w = writers[static_cast<std::size_t>(p)];
    if (w.empty()) {
      if (ddata) ddata[p] += dy[p];
      continue;
    }
    // The slice element this position is for each writer: p - offset(t).
    auto at = [&](std::int64_t t) {
      return t * L.slice + (p - L.offsets[static_cast<std::size_t>(t)]);
    };
    switch (red) {
      case ScatterReduction::None:
        if (dupd) dupd[at(w.back())] += dy[p];
        break;
      case ScatterReduction::Add:
        if (ddata) ddata[p] += dy[p];
        if (dupd)
          for (auto t : w) dupd[at(t)] += dy[p];
        break;
      case ScatterReduction::Mul: {
        T all = T(1);
        for (auto t : w) all *= upd[at(t)];
        if (ddata) ddata[p] += dy[p] * all;
        if (dupd)
          for (std::size_t a = 0; a < w.size(); ++a) {
            T others = data[p];
            for (std::size_t b = 0; b < w.size(); ++b)
              if (b != a) others *= upd[at(w[b])];
            dupd[at(w[a])] += dy[p] * others;
          }
        break;
      }
    }
  }
}

}  // namespace unity::pad_kernels
