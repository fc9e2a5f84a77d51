// Element-wise, layout and reduction kernels.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::kernels {
namespace {

// Dropout as a deterministic function of the value: whether an element is dropped depends on its
// bits, so the operator commutes with every change of layout (as a mask drawn per logical element
// would) while staying a pure function the verifier can reason about.
double dropout(double x, double rate) {
  if (rate <= 0) return x;
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits ^= bits >> 33;
  bits *= 0xff51afd7ed558ccdULL;
  bits ^= bits >> 33;
  const double u = static_cast<double>(bits % 1000003) / 1000003.0;
  return u < rate ? 0.0 : x / (1.0 - rate);
}

}  // namespace

double activation(const std::string& name, double x) {
  if (name == "relu") return x > 0 ? x : 0.0;
  if (name == "gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "tanh") return std::tanh(x);
  return x;
}

DenseTensor map_unary(const Operator& op, const DenseTensor& x) {
  DenseTensor out = x;
  if (op.type == OpType::Dropout) {
    const double rate = op.attrs.get_double("rate", 0.0);
    for (auto& v : out.data) v = dropout(v, rate);
    return out;
  }
  const PointwiseFunction* f = pointwise_function(op.type);
  if (!f) return out;
  const std::vector<double> params = operator_parameters(op);
  for (auto& v : out.data) v = f->value(v, params.data());
  return out;
}

DenseTensor binary(OpType op, const DenseTensor& a, const DenseTensor& b) {
  const int r = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> sizes(r);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const std::int64_t sa = ia >= 0 ? a.sizes[ia] : 1, sb = ib >= 0 ? b.sizes[ib] : 1;
    sizes[i] = std::max(sa, sb);
  }
  DenseTensor out(sizes);
  std::vector<std::int64_t> ia(a.rank()), ib(b.rank());
  std::int64_t n = 0;
  for_each_index(sizes, [&](const std::vector<std::int64_t>& idx) {
    for (int d = 0; d < a.rank(); ++d) ia[d] = a.sizes[d] == 1 ? 0 : idx[d + r - a.rank()];
    for (int d = 0; d < b.rank(); ++d) ib[d] = b.sizes[d] == 1 ? 0 : idx[d + r - b.rank()];
    const double x = a.at(ia), y = b.at(ib);
    double v = 0;
    switch (op) {
      case OpType::Add:
        v = x + y;
        break;
      case OpType::Sub:
        v = x - y;
        break;
      case OpType::Mul:
        v = x * y;
        break;
      default:
        v = x / y;
    }
    out.data[n++] = v;
  });
  return out;
}

DenseTensor softmax(const DenseTensor& x, int axis) {
  DenseTensor out = x;
  auto outer = x.sizes;
  outer[axis] = 1;
  for_each_index(outer, [&](std::vector<std::int64_t> idx) {
    double m = -std::numeric_limits<double>::infinity();
    for (idx[axis] = 0; idx[axis] < x.sizes[axis]; ++idx[axis]) m = std::max(m, x.at(idx));
    double sum = 0;
    for (idx[axis] = 0; idx[axis] < x.sizes[axis]; ++idx[axis]) sum += std::exp(x.at(idx) - m);
    for (idx[axis] = 0; idx[axis] < x.sizes[axis]; ++idx[axis])
      out.at(idx) = std::exp(x.at(idx) - m) / sum;
  });
  return out;
}

DenseTensor map_along_axis(const AxisFunction& f, const DenseTensor& x, int axis,
                           const std::vector<double>& params) {
  DenseTensor out = x;
  auto outer = x.sizes;
  outer[axis] = 1;
  const std::int64_t n = x.sizes[axis];
  std::vector<double> in(static_cast<std::size_t>(n)), res(static_cast<std::size_t>(n));
  for_each_index(outer, [&](std::vector<std::int64_t> idx) {
    for (idx[axis] = 0; idx[axis] < n; ++idx[axis]) in[idx[axis]] = x.at(idx);
    f.forward(in.data(), res.data(), n, params.data());
    for (idx[axis] = 0; idx[axis] < n; ++idx[axis]) out.at(idx) = res[idx[axis]];
  });
  return out;
}

DenseTensor reduce(const DenseTensor& x, const std::vector<int>& axes,
                   const std::vector<Range>& blocks, bool keepdims, bool mean) {
  std::vector<bool> reduced(x.rank(), false);
  for (int a : axes) reduced[a] = true;
  std::vector<std::int64_t> kept_sizes;  // keepdims layout
  for (int d = 0; d < x.rank(); ++d) kept_sizes.push_back(reduced[d] ? 1 : x.sizes[d]);
  DenseTensor out(kept_sizes);
  std::int64_t count = 1;
  for (int a : axes) count *= x.sizes[a];
  std::vector<std::int64_t> o(x.rank());
  for_each_index(x.sizes, [&](const std::vector<std::int64_t>& idx) {
    for (std::size_t i = 0; i < axes.size(); ++i)
      if (idx[axes[i]] < blocks[i].first || idx[axes[i]] >= blocks[i].second) return;
    for (int d = 0; d < x.rank(); ++d) o[d] = reduced[d] ? 0 : idx[d];
    out.at(o) += x.at(idx);
  });
  if (mean)
    for (auto& v : out.data) v /= static_cast<double>(count);
  if (!keepdims) {
    std::vector<std::int64_t> sizes;
    for (int d = 0; d < x.rank(); ++d)
      if (!reduced[d]) sizes.push_back(x.sizes[d]);
    out.sizes = sizes;
  }
  return out;
}

DenseTensor softmax_cross_entropy(const DenseTensor& logits, const DenseTensor& labels) {
  const int c_axis = logits.rank() - 1;
  const DenseTensor p = softmax(logits, c_axis);
  DenseTensor out(labels.sizes);
  std::int64_t n = 0;
  for_each_index(labels.sizes, [&](std::vector<std::int64_t> idx) {
    const double label = labels.data[n];
    const auto c = static_cast<std::int64_t>(label);
    if (c < 0 || c >= logits.sizes[c_axis]) {
      out.data[n++] = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    idx.push_back(c);
    out.data[n++] = -std::log(p.at(idx));
  });
  return out;
}

DenseTensor mse_loss(const DenseTensor& prediction, const DenseTensor& target) {
  DenseTensor out({prediction.sizes[0]});
  const std::int64_t per = prediction.numel() / prediction.sizes[0];
  for (std::int64_t i = 0; i < prediction.numel(); ++i) {
    const double e = prediction.data[i] - target.data[i];
    out.data[i / per] += e * e / static_cast<double>(per);
  }
  return out;
}

std::vector<DenseTensor> split(const DenseTensor& x, int axis,
                               const std::vector<std::int64_t>& sizes) {
  std::vector<DenseTensor> out;
  std::int64_t begin = 0;
  for (auto s : sizes) {
    out.push_back(slice(x, axis, begin, begin + s));
    begin += s;
  }
  return out;
}

DenseTensor reshape(const DenseTensor& x, const std::vector<std::int64_t>& sizes) {
  DenseTensor out = x;
  out.sizes = sizes;
  return out;
}

}  // namespace unity::rules::kernels
