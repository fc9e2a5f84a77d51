#pragma once
// The index operators' arithmetic (TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin)
// on row-major buffers, written once for the executor's CPU kernels (float values, int64 indices)
// and the rule evaluator (doubles throughout). `axis` is non-negative; the functions returning
// bool return false for an index outside [-n, n) of its axis (negative indices count from the
// end, as in ONNX). Backward functions accumulate (+=) into the gradients they are given.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace unity::index_kernels {

using Dims = std::vector<std::int64_t>;

inline std::int64_t element_count(const Dims& d) {
  std::int64_t n = 1;
  for (auto v : d) n *= v;
  return n;
}

inline Dims row_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * d[i + 1];
  return s;
}

// Calls f(i, base) for every element i (row-major) of `shape`, with `base` its offset in a
// tensor of `other` dims (same rank, each dim at least as large) less the `axis` coordinate.
template <typename F>
void for_each_element(const Dims& shape, const Dims& other, int axis, F&& f) {
  const std::int64_t total = element_count(shape);
  if (total == 0) return;
  const Dims os = row_strides(other);
  Dims index(shape.size(), 0);
  std::int64_t base = 0;
  for (std::int64_t i = 0; i < total; ++i) {
    f(i, base);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (d != axis) base += os[d];
      if (++index[d] < shape[d]) break;
      if (d != axis) base -= os[d] * shape[d];
      index[d] = 0;
    }
  }
}

// An index along an axis of n, made non-negative; -1 when outside [-n, n).
template <typename I>
std::int64_t position(I raw, std::int64_t n) {
  auto p = static_cast<std::int64_t>(raw);
  if (p < 0) p += n;
  return p >= 0 && p < n ? p : -1;
}

// out[i] = data[i with its axis coordinate replaced by idx[i]]; out has idx's dims.
template <typename T, typename I>
bool gather_elements(const T* data, const Dims& data_dims, const I* idx, const Dims& idx_dims,
                     int axis, T* out) {
  const std::int64_t n = data_dims[axis], stride = row_strides(data_dims)[axis];
  bool ok = true;
  for_each_element(idx_dims, data_dims, axis, [&](std::int64_t i, std::int64_t base) {
    const std::int64_t p = position(idx[i], n);
    if (p < 0) {
      ok = false;
      out[i] = T(0);
      return;
    }
    out[i] = data[base + p * stride];
  });
  return ok;
}

// The adjoint of gather_elements: d(data) += dy scattered to the positions read.
template <typename T, typename I>
void gather_elements_backward(const T* dy, const I* idx, const Dims& idx_dims,
                              const Dims& data_dims, int axis, T* ddata) {
  const std::int64_t n = data_dims[axis], stride = row_strides(data_dims)[axis];
  for_each_element(idx_dims, data_dims, axis, [&](std::int64_t i, std::int64_t base) {
    const std::int64_t p = position(idx[i], n);
    if (p >= 0) ddata[base + p * stride] += dy[i];
  });
}

// out = data, then out[idx position of i] = updates[i] (or += with `add`), in row-major order
// of the updates (the last write wins).
template <typename T, typename I>
bool scatter_elements(const T* data, const Dims& data_dims, const I* idx, const T* updates,
                      const Dims& idx_dims, int axis, bool add, T* out) {
  std::copy(data, data + element_count(data_dims), out);
  const std::int64_t n = data_dims[axis], stride = row_strides(data_dims)[axis];
  bool ok = true;
  for_each_element(idx_dims, data_dims, axis, [&](std::int64_t i, std::int64_t base) {
    const std::int64_t p = position(idx[i], n);
    if (p < 0) {
      ok = false;
      return;
    }
    T& o = out[base + p * stride];
    o = add ? o + updates[i] : updates[i];
  });
  return ok;
}

// d(data) += dy, less the positions overwritten (all of dy with `add`); d(updates) += dy at the
// positions each update went to. Either gradient may be null. Of updates written to one position
// (without `add`), only the last one written gets the gradient, as only it reaches the output.
template <typename T, typename I>
void scatter_elements_backward(const T* dy, const Dims& data_dims, const I* idx,
                               const Dims& idx_dims, int axis, bool add, T* ddata, T* dupdates) {
  const std::int64_t total = element_count(data_dims);
  const std::int64_t n = data_dims[axis], stride = row_strides(data_dims)[axis];
  std::vector<std::int64_t> writer;  // the update that reached each position, or -1
  if (!add) writer.assign(static_cast<std::size_t>(total), -1);
  if (!add)
    for_each_element(idx_dims, data_dims, axis, [&](std::int64_t i, std::int64_t base) {
      const std::int64_t p = position(idx[i], n);
      if (p >= 0) writer[static_cast<std::size_t>(base + p * stride)] = i;
    });
  if (ddata)
    for (std::int64_t j = 0; j < total; ++j)
      if (add || writer[static_cast<std::size_t>(j)] < 0) ddata[j] += dy[j];
  if (dupdates)
    for_each_element(idx_dims, data_dims, axis, [&](std::int64_t i, std::int64_t base) {
      const std::int64_t p = position(idx[i], n);
      if (p < 0) return;
      const std::int64_t j = base + p * stride;
      if (add || writer[static_cast<std::size_t>(j)] == i) dupdates[i] += dy[j];
    });
}

// The k largest (smallest) values of every slice along the axis, in order (equal values: the
// lower index first, as ONNX), and their indices; values and indices have x's dims with k along
// the axis.
template <typename T, typename I>
void top_k(const T* x, const Dims& dims, int axis, std::int64_t k, bool largest, T* values,
           I* indices) {
  const std::int64_t n = dims[axis], stride = row_strides(dims)[axis];
  Dims out_dims = dims;
  out_dims[axis] = k;
  const std::int64_t out_stride = row_strides(out_dims)[axis];
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  const Dims xs = row_strides(dims), os = row_strides(out_dims);
  // Every slice: the elements of out_dims with axis coordinate 0.
  Dims slices = dims;
  slices[axis] = 1;
  for_each_element(slices, dims, axis, [&](std::int64_t, std::int64_t base) {
    std::iota(order.begin(), order.end(), 0);
    auto better = [&](std::int64_t a, std::int64_t b) {
      const T va = x[base + a * stride], vb = x[base + b * stride];
      if (va != vb) return largest ? va > vb : va < vb;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
    // The same slice of the output: base counted in out_dims.
    std::int64_t ob = 0, rest = base;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      ob += rest / xs[d] * os[d];
      rest %= xs[d];
    }
    for (std::int64_t j = 0; j < k; ++j) {
      values[ob + j * out_stride] = x[base + order[j] * stride];
      indices[ob + j * out_stride] = static_cast<I>(order[j]);
    }
  });
}

// The index of the largest (smallest) value of every slice along the axis: the first one, or
// the last one with `last`. The output has x's dims less the axis (as keepdims = 0; keepdims = 1
// is the same buffer).
template <typename T, typename I>
void arg_extreme(const T* x, const Dims& dims, int axis, bool largest, bool last, I* out) {
  const std::int64_t n = dims[axis], stride = row_strides(dims)[axis];
  Dims slices = dims;
  slices[axis] = 1;
  for_each_element(slices, dims, axis, [&](std::int64_t s, std::int64_t base) {
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < n; ++j) {
      const T v = x[base + j * stride], b = x[base + best * stride];
      if (largest ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = j;
    }
    out[s] = static_cast<I>(best);
  });
}

// out has idx's dims with `depth` inserted at `axis` (of the output): on_value where the
// coordinate along it equals the index (negative indices count from the end), off_value
// elsewhere; an index outside [-depth, depth) gives a row of off_value.
template <typename T, typename I>
void one_hot(const I* idx, const Dims& idx_dims, int axis, std::int64_t depth, T off_value,
             T on_value, T* out) {
  Dims out_dims = idx_dims;
  out_dims.insert(out_dims.begin() + axis, depth);
  std::fill(out, out + element_count(out_dims), off_value);
  const std::int64_t stride = row_strides(out_dims)[axis];
  Dims with_axis = idx_dims;
  with_axis.insert(with_axis.begin() + axis, 1);
  for_each_element(with_axis, out_dims, axis, [&](std::int64_t i, std::int64_t base) {
    const std::int64_t p = position(idx[i], depth);
    if (p >= 0) out[base + p * stride] = on_value;
  });
}

}  // namespace unity::index_kernels
