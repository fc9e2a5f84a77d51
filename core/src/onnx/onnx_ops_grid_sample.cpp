// GridSample (opset 16; torch.nn.functional.grid_sample: spatial transformers, the warps of optical
// flow and of deformable sampling) as the operators it is made of, the way DepthToSpace is
// (docs/operators.md): each output pixel reads the input at a coordinate the grid gives, so the
// sampling is a GatherElements of the input's flattened plane at the corner indices, weighted by
// the bilinear or bicubic weights (or 1 for nearest), the weights zero where a corner falls outside
// the input. The coordinates are the grid's unnormalised as PyTorch does (align_corners or not),
// clamped for border padding and reflected for reflection padding (bicubic: each of its four taps a
// dim). The gradient then flows as the pieces' do: to the input through GatherElements'
// scatter-add, to the grid through the weights (Floor and Round have none), which is grid_sample's
// own backward. No new kernel, rule or axiom: the samples split through every piece.
#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>

#include "onnx/onnx_op_mapping.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

class GridSampler {
 public:
  GridSampler(ImportContext& ctx, const ::onnx::NodeProto& node)
      : ctx_(ctx), node_(node), name_(node_name(node)) {}

  void run() {
    mode_ = attr_string(node_, "mode", "bilinear");
    if (mode_ == "linear") mode_ = "bilinear";  // opset 20's names
    if (mode_ == "cubic") mode_ = "bicubic";
    if (mode_ != "bilinear" && mode_ != "nearest" && mode_ != "bicubic")
      unsupported_use(node_,
                      fmt::format("mode '{}' is not one of bilinear, nearest, bicubic", mode_));
    padding_ = attr_string(node_, "padding_mode", "zeros");
    if (padding_ != "zeros" && padding_ != "border" && padding_ != "reflection")
      unsupported_use(node_, fmt::format("padding_mode '{}' is not one of zeros, border, "
                                         "reflection",
                                         padding_));
    align_corners_ = attr_int(node_, "align_corners", 0) != 0;
    const TensorRef x = ctx_.tensor(node_.input(0));
    const TensorRef grid = ctx_.tensor(node_.input(1));
    const Ints xs = ctx_.sizes(x), gs = ctx_.sizes(grid);
    if (xs.size() != 4 || gs.size() != 4 || gs[3] != 2 || gs[0] != xs[0])
      unsupported_use(node_, fmt::format("X {} and grid {} are not [N, C, H, W] and [N, H_out, "
                                         "W_out, 2] (only 2-D sampling is supported)",
                                         format_dims(xs), format_dims(gs)));
    n_ = xs[0];
    c_ = xs[1];
    h_ = xs[2];
    w_ = xs[3];
    points_ = gs[1] * gs[2];
    // The grid's x and y coordinates, each [N, 1, H_out x W_out].
    const TensorRef flat = ctx_.reshape(grid, {n_, points_, 2}, name("grid.flat"));
    const TensorRef gx = ctx_.reshape(ctx_.slice(flat, 2, 0, 1, name("grid.x")), {n_, 1, points_},
                                      name("grid.x.row"));
    const TensorRef gy = ctx_.reshape(ctx_.slice(flat, 2, 1, 2, name("grid.y")), {n_, 1, points_},
                                      name("grid.y.row"));
    const TensorRef ix = source(gx, w_, "x"), iy = source(gy, h_, "y");
    const TensorRef plane = ctx_.reshape(x, {n_, c_, h_ * w_}, name("plane"));

    std::vector<Tap> xt = taps(ix, w_, "x"), yt = taps(iy, h_, "y");
    std::optional<TensorRef> sum;
    for (std::size_t a = 0; a < yt.size(); ++a)
      for (std::size_t b = 0; b < xt.size(); ++b) {
        const std::string corner = fmt::format("corner{}{}", a, b);
        const TensorRef index = ctx_.add(
            OpType::Add, {},
            {scalar(OpType::ScalarMul, static_cast<double>(w_), yt[a].index, corner + ".row"),
             xt[b].index},
            name(corner + ".index"));
        const TensorRef ints =
            ctx_.add(OpType::Cast, {{"to", std::string("int64")}}, {index}, name(corner + ".int"));
        const TensorRef spread = ctx_.add(OpType::Expand, {{"shape", Ints{n_, c_, points_}}},
                                          {ints}, name(corner + ".channels"));
        const TensorRef values = ctx_.add(OpType::GatherElements, {{"axis", std::int64_t{2}}},
                                          {plane, spread}, name(corner + ".values"));
        const TensorRef weight =
            ctx_.add(OpType::Mul, {}, {yt[a].weight, xt[b].weight}, name(corner + ".weight"));
        const TensorRef term =
            ctx_.add(OpType::Mul, {}, {values, weight}, name(corner + ".weighted"));
        sum = sum ? ctx_.add(OpType::Add, {}, {*sum, term}, name(corner + ".sum")) : term;
      }
    ctx_.bind_tensor(node_.output(0), ctx_.reshape(*sum, {n_, c_, gs[1], gs[2]}, name_));
  }

 private:
  // A corner along one dim: its index (clamped into the input, as a float) and its weight, zero
  // where the corner lies outside the input.
  struct Tap {
    TensorRef index, weight;
  };

  std::string name(const std::string& what) const { return name_ + "." + what; }

  TensorRef scalar(OpType op, double value, TensorRef t, const std::string& what) {
    return ctx_.add(op, {{"scalar", value}}, {t}, name(what));
  }
  TensorRef arithmetic(const char* function, double value, TensorRef t, const std::string& what) {
    return ctx_.add(OpType::Arithmetic, {{"function", std::string(function)}, {"scalar", value}},
                    {t}, name(what));
  }
  TensorRef clamp(TensorRef t, std::int64_t size, const std::string& what) {
    return arithmetic("min", static_cast<double>(size - 1),
                      arithmetic("max", 0.0, t, what + ".low"), what + ".high");
  }

  // The input coordinate of a grid coordinate in [-1, 1] along a dim of `size` pixels: the
  // corners' centres (align_corners) or their outer edges span it. Bilinear and nearest sampling
  // then pad the coordinate; bicubic pads each of its taps (PyTorch's get_value_bounded).
  TensorRef source(TensorRef g, std::int64_t size, const std::string& dim) {
    const double s = static_cast<double>(size);
    const double half_span = align_corners_ ? (s - 1) / 2 : s / 2;
    const TensorRef u =
        scalar(OpType::ScalarAdd, (s - 1) / 2,
               scalar(OpType::ScalarMul, half_span, g, dim + ".scale"), dim + ".source");
    return mode_ == "bicubic" ? u : pad(u, size, dim);
  }

  // Border padding clamps a coordinate into the input; reflection padding folds it back in
  // (PyTorch's reflect_coordinates) and clamps it; zeros padding leaves it.
  TensorRef pad(TensorRef u, std::int64_t size, const std::string& what) {
    if (padding_ == "zeros") return u;
    if (padding_ == "reflection") {
      // Reflect about [low, high] (the centres, or the edges): with span = high - low,
      // t = |u - low| mod 2 span, u = low + span - |t - span|.
      const double s = static_cast<double>(size);
      const double low = align_corners_ ? 0.0 : -0.5;
      const double span = align_corners_ ? s - 1 : s;
      if (span > 0) {
        const TensorRef from_low =
            ctx_.add(OpType::Abs, {}, {scalar(OpType::ScalarAdd, -low, u, what + ".from_low")},
                     name(what + ".distance"));
        const TensorRef folded = arithmetic("fmod", 2 * span, from_low, what + ".fold");
        const TensorRef mirrored = ctx_.add(
            OpType::Abs, {}, {scalar(OpType::ScalarAdd, -span, folded, what + ".past_span")},
            name(what + ".mirror"));
        u = scalar(OpType::ScalarAdd, low + span,
                   scalar(OpType::ScalarMul, -1.0, mirrored, what + ".negate"),
                   what + ".reflected");
      } else {
        u = scalar(OpType::ScalarMul, 0.0, u, what + ".reflected");
      }
    }
    return clamp(u, size, what + ".clamped");
  }

  // p(v) = c[0] v^3 + c[1] v^2 + c[2] v + c[3], by Horner's rule.
  TensorRef cubic(TensorRef v, const std::array<double, 4>& c, const std::string& what) {
    TensorRef p = scalar(OpType::ScalarAdd, c[1], scalar(OpType::ScalarMul, c[0], v, what + ".c3"),
                         what + ".c2");
    p = scalar(OpType::ScalarAdd, c[2], ctx_.add(OpType::Mul, {}, {p, v}, name(what + ".v2")),
               what + ".c1");
    return scalar(OpType::ScalarAdd, c[3], ctx_.add(OpType::Mul, {}, {p, v}, name(what + ".v3")),
                  what + ".c0");
  }

  // Whether a corner index lies in [0, size - 1], as a float weight of 1 or 0.
  TensorRef inside(TensorRef index, std::int64_t size, const std::string& what) {
    const TensorRef above = ctx_.add(
        OpType::Compare, {{"comparison", std::string("greater_or_equal")}, {"scalar", 0.0}},
        {index}, name(what + ".above"));
    const TensorRef below = ctx_.add(
        OpType::Compare,
        {{"comparison", std::string("less_or_equal")}, {"scalar", static_cast<double>(size - 1)}},
        {index}, name(what + ".below"));
    return ctx_.add(OpType::Logical, {{"logic", std::string("and")}}, {above, below},
                    name(what + ".inside"));
  }

  // A corner with its weight (nearest: none, 1), which is zero where the corner is outside.
  Tap tap(TensorRef index, std::optional<TensorRef> weight, std::int64_t size,
          const std::string& what) {
    const TensorRef in = inside(index, size, what);
    const TensorRef masked =
        weight ? ctx_.add(OpType::Where, {{"y", 0.0}}, {in, *weight}, name(what + ".weight"))
               : ctx_.add(OpType::Where, {{"x", 1.0}, {"y", 0.0}}, {in}, name(what + ".weight"));
    return {clamp(index, size, what + ".index"), masked};
  }

  std::vector<Tap> taps(TensorRef u, std::int64_t size, const std::string& dim) {
    if (mode_ == "nearest") {
      // Round half to even, as PyTorch's nearbyint; the weight 1 where the pixel exists.
      const TensorRef nearest = ctx_.add(OpType::Round, {}, {u}, name(dim + ".nearest"));
      return {tap(nearest, std::nullopt, size, dim + "0")};
    }
    const TensorRef below = ctx_.add(OpType::Floor, {}, {u}, name(dim + ".floor"));
    if (mode_ == "bicubic") {
      // Keys's cubic convolution (A = -0.75, PyTorch's) over taps floor - 1 .. floor + 2 at
      // distances 1 + t, t, 1 - t, 2 - t; each tap's index padded on its own.
      constexpr double A = -0.75;
      const std::array<double, 4> outer{A, -5 * A, 8 * A, -4 * A};   // for distances 1 to 2
      const std::array<double, 4> inner{A + 2, -(A + 3), 0.0, 1.0};  // for distances 0 to 1
      const TensorRef t = ctx_.add(OpType::Sub, {}, {u, below}, name(dim + ".frac"));
      auto shifted = [&](double scale, double offset, const std::string& what) {
        return scalar(OpType::ScalarAdd, offset,
                      scalar(OpType::ScalarMul, scale, t, what + ".scaled"), what);
      };
      const std::array<TensorRef, 4> weights{
          cubic(shifted(1.0, 1.0, dim + ".d0"), outer, dim + ".w0"), cubic(t, inner, dim + ".w1"),
          cubic(shifted(-1.0, 1.0, dim + ".d2"), inner, dim + ".w2"),
          cubic(shifted(-1.0, 2.0, dim + ".d3"), outer, dim + ".w3")};
      std::vector<Tap> out;
      for (int k = 0; k < 4; ++k) {
        const std::string what = dim + std::to_string(k);
        const TensorRef index =
            pad(scalar(OpType::ScalarAdd, static_cast<double>(k - 1), below, what + ".tap"), size,
                what);
        out.push_back(tap(index, weights[static_cast<std::size_t>(k)], size, what));
      }
      return out;
    }
    const TensorRef above = scalar(OpType::ScalarAdd, 1.0, below, dim + ".ceil");
    const TensorRef w_above = ctx_.add(OpType::Sub, {}, {u, below}, name(dim + ".frac"));
    const TensorRef w_below = scalar(OpType::ScalarAdd, 1.0,
                                     scalar(OpType::ScalarMul, -1.0, w_above, dim + ".minus_frac"),
                                     dim + ".one_minus_frac");
    return {tap(below, w_below, size, dim + "0"), tap(above, w_above, size, dim + "1")};
  }

  ImportContext& ctx_;
  const ::onnx::NodeProto& node_;
  std::string name_;
  std::string mode_, padding_;
  bool align_corners_ = false;
  std::int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, points_ = 0;
};

void map_grid_sample(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  GridSampler(ctx, node).run();
}

}  // namespace

static void register_grid_sample_ops(OnnxImports& table) { table["GridSample"] = map_grid_sample; }

UNITY_REGISTER_ONNX_IMPORTS(register_grid_sample_ops)

}  // namespace unity::onnxio
