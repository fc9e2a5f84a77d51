// RNN, LSTM and GRU (ONNX's definitions, opset 7 and later; torch.nn.RNN / nn.LSTM / nn.GRU export
// one node per layer), unrolled over the sequence into operators the PCG has: one Linear projects
// every time step's input at once, and each step is a Linear of the previous hidden state (its
// weight shared by all steps), the gate non-linearities and the element-wise state update. The
// unrolled graph is what the cost model, the search and the executor already know; a sequence of
// length s becomes s steps.
//
// Supported: directions forward, reverse and bidirectional; ONNX's activation functions (each
// direction its own, with activation_alpha/beta; torch.nn.RNN's nonlinearity='relu' exports Relu);
// initial states (absent or zero, or given); LSTM's peepholes; GRU's linear_before_reset either
// way; layout 0 and 1. Not supported, and named when met: clip, input_forget, per-sequence
// lengths.
#include <fmt/format.h>

#include <map>
#include <optional>

#include "onnx/onnx_op_mapping.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

enum class Cell { Lstm, Gru, Rnn };

// Activation functions per direction, in ONNX's order (LSTM f, g, h; GRU f, g; RNN f).
int activation_count(Cell cell) { return cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1; }

struct Activation {
  std::string name;
  std::optional<double> alpha, beta;
};

// ONNX's activation functions and which of activation_alpha / activation_beta each consumes, in
// order (as onnxruntime reads them); the defaults are those of the operators of the same name.
struct ActivationParameters {
  bool alpha = false, beta = false;
};
const std::map<std::string, ActivationParameters>& activation_parameters() {
  static const std::map<std::string, ActivationParameters> table = {
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"Relu", {}},
      {"Softsign", {}},
      {"Softplus", {}},
      {"LeakyRelu", {true, false}},
      {"ThresholdedRelu", {true, false}},
      {"Elu", {true, false}},
      {"HardSigmoid", {true, true}},
      {"ScaledTanh", {true, true}},
      {"Affine", {true, true}}};
  return table;
}

std::vector<Activation> read_activations(const ::onnx::NodeProto& node, Cell cell, int directions) {
  const int per_direction = activation_count(cell);
  std::vector<Activation> out;
  const auto* given = find_attribute(node, "activations");
  if (!given || given->strings_size() == 0) {
    const std::vector<std::string> defaults =
        cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
        : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                            : std::vector<std::string>{"Tanh"};
    for (int d = 0; d < directions; ++d)
      for (const auto& name : defaults) out.push_back({name, std::nullopt, std::nullopt});
    return out;
  }
  if (given->strings_size() != per_direction * directions)
    unsupported_use(node, fmt::format("activations lists {} functions; {} directions of {} take {}",
                                      given->strings_size(), directions, per_direction,
                                      per_direction * directions));
  const auto* alphas = find_attribute(node, "activation_alpha");
  const auto* betas = find_attribute(node, "activation_beta");
  int next_alpha = 0, next_beta = 0;
  for (int i = 0; i < given->strings_size(); ++i) {
    Activation a{given->strings(i), std::nullopt, std::nullopt};
    const auto it = activation_parameters().find(a.name);
    if (it == activation_parameters().end())
      unsupported_use(node, "activation '" + a.name + "' is not one of ONNX's");
    if (it->second.alpha && alphas && next_alpha < alphas->floats_size())
      a.alpha = alphas->floats(next_alpha++);
    if (it->second.beta && betas && next_beta < betas->floats_size())
      a.beta = betas->floats(next_beta++);
    out.push_back(std::move(a));
  }
  return out;
}

struct RecurrentShape {
  std::int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int directions = 1;
  bool batch_first = false;  // layout 1
};

// A constant input that is all zeros carries no information (torch exports zero initial states).
bool is_zero_constant(ImportContext& ctx, const std::string& value) {
  if (value.empty()) return true;
  if (!ctx.is_constant(value)) return false;
  const ConstTensor& t = ctx.constant(value);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.as_double(i) != 0.0) return false;
  return true;
}

void check_supported(const ::onnx::NodeProto& node, Cell cell) {
  if (find_attribute(node, "clip")) unsupported_use(node, "the clip attribute is not supported");
  if (cell == Cell::Lstm && attr_int(node, "input_forget", 0) != 0)
    unsupported_use(node, "input_forget = 1 (coupled input and forget gates) is not supported");
}

class Unroller {
 public:
  Unroller(ImportContext& ctx, const ::onnx::NodeProto& node, Cell cell)
      : ctx_(ctx),
        node_(node),
        cell_(cell),
        name_(node_name(node)),
        gates_(cell == Cell::Lstm  ? 4
               : cell == Cell::Gru ? 3
                                   : 1) {}

  void run() {
    check_supported(node_, cell_);
    read_shape();
    activations_ = read_activations(node_, cell_, shape_.directions);
    TensorRef x = ctx_.tensor(node_.input(0));
    if (shape_.batch_first) x = transpose(x, {1, 0, 2}, "x.layout");  // to [seq, batch, input]
    std::vector<TensorRef> ys, last_h, last_c;
    for (int d = 0; d < shape_.directions; ++d) {
      const auto [y, h, c] = direction(x, d);
      ys.push_back(y);
      last_h.push_back(h);
      if (c) last_c.push_back(*c);
    }
    bind_outputs(ys, last_h, last_c);
  }

 private:
  struct DirectionResult {
    TensorRef y, h;
    std::optional<TensorRef> c;
  };

  void read_shape() {
    const Ints x = ctx_.dims(node_.input(0)), w = ctx_.dims(node_.input(1));
    if (x.size() != 3 || w.size() != 3)
      unsupported_use(node_, "X must be 3-D and W [directions, gates x hidden, input]");
    shape_.hidden = attr_int(node_, "hidden_size", w[1] / gates_);
    shape_.batch_first = attr_int(node_, "layout", 0) == 1;
    shape_.seq = shape_.batch_first ? x[1] : x[0];
    shape_.batch = shape_.batch_first ? x[0] : x[1];
    shape_.input = x[2];
    const std::string direction = attr_string(node_, "direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      unsupported_use(
          node_, "direction '" + direction + "' is not one of forward, reverse, bidirectional");
    reverse_only_ = direction == "reverse";
    before_reset_ = attr_int(node_, "linear_before_reset", 0) != 0;
    shape_.directions = direction == "bidirectional" ? 2 : 1;
    if (w[0] != shape_.directions || w[1] != gates_ * shape_.hidden || w[2] != shape_.input)
      unsupported_use(node_, fmt::format("W has shape {}, expected [{}, {}, {}]", format_dims(w),
                                         shape_.directions, gates_ * shape_.hidden, shape_.input));
    const std::string& lengths = input_name(node_, 4);
    if (!lengths.empty() && !ctx_.is_constant(lengths))
      unsupported_use(node_, "sequence_lens computed from the inputs is not supported");
    if (!lengths.empty())
      for (auto l : ctx_.constant(lengths).to_ints())
        if (l != shape_.seq)
          unsupported_use(node_,
                          "sequences of different lengths (sequence_lens) are not supported");
  }

  std::string name(const std::string& what) const { return name_ + "." + what; }

  TensorRef transpose(TensorRef t, Ints perm, const std::string& what) {
    return ctx_.add(OpType::Transpose, {{"perm", std::move(perm)}}, {t}, name(what));
  }

  // Rows [d * rows, (d + 1) * rows) of input `slot` viewed as [directions * rows, cols].
  // The [directions * rows, cols] view is made once and shared by the directions.
  TensorRef direction_rows(int slot, int d, std::int64_t rows, std::int64_t cols,
                           const std::string& what) {
    auto it = rows_of_.find(slot);
    if (it == rows_of_.end())
      it = rows_of_
               .emplace(slot, ctx_.reshape(ctx_.tensor(node_.input(slot)),
                                           {shape_.directions * rows, cols}, name(what + ".rows")))
               .first;
    return ctx_.slice(it->second, 0, d * rows, (d + 1) * rows, name(what + std::to_string(d)));
  }

  // Initial state of direction d ([batch, hidden]), or nullopt when it is zero. The layout change
  // and the [directions * batch, hidden] view are made once and shared by the directions.
  std::optional<TensorRef> initial(int slot, int d, const std::string& what) {
    const std::string& value = input_name(node_, slot);
    if (is_zero_constant(ctx_, value)) return std::nullopt;
    auto it = rows_of_.find(slot);
    if (it == rows_of_.end()) {
      TensorRef t = ctx_.tensor(value);
      if (shape_.batch_first) t = transpose(t, {1, 0, 2}, what + ".layout");
      it = rows_of_
               .emplace(slot, ctx_.reshape(t, {shape_.directions * shape_.batch, shape_.hidden},
                                           name(what + ".rows")))
               .first;
    }
    return ctx_.slice(it->second, 0, d * shape_.batch, (d + 1) * shape_.batch,
                      name(what + std::to_string(d)));
  }

  DirectionResult direction(TensorRef x, int d) {
    const std::int64_t h = shape_.hidden, g = gates_ * h;
    const std::string tag = shape_.directions > 1 ? std::to_string(d) : "";
    // W^T [input, g] and R^T [hidden, g]: the Linear's [in, out] weights.
    const TensorRef w =
        transpose(direction_rows(1, d, g, shape_.input, "W"), {1, 0}, "W" + tag + ".T");
    // Bias: [Wb; Rb] per direction. LSTM and RNN add both to every step's gates, so they fold into
    // the input projection; GRU's Rb stays with the recurrent Linear (r multiplies it).
    std::optional<TensorRef> wb, rb;
    if (!is_zero_constant(ctx_, input_name(node_, 3))) {
      const TensorRef both = direction_rows(3, d, 2, g, "B");  // [2, g]
      if (cell_ != Cell::Gru) {
        wb = ctx_.add(OpType::ReduceSum, {{"axes", Ints{0}}, {"keepdims", std::int64_t{0}}}, {both},
                      name("B" + tag + ".sum"));
      } else {
        wb = ctx_.reshape(ctx_.slice(both, 0, 0, 1, name("Wb" + tag)), {g},
                          name("Wb" + tag + ".flat"));
        rb = ctx_.reshape(ctx_.slice(both, 0, 1, 2, name("Rb" + tag)), {g},
                          name("Rb" + tag + ".flat"));
      }
    }
    std::vector<TensorRef> xw_inputs{x, w};
    if (wb) xw_inputs.push_back(*wb);
    const TensorRef xw = linear(xw_inputs, g, "input_projection" + tag);

    std::optional<TensorRef> state_h = initial(5, d, "initial_h"), state_c;
    if (cell_ == Cell::Lstm) state_c = initial(6, d, "initial_c");
    // R^T, unless no step has a previous state to multiply (one step from a zero state): an
    // unread weight would be a sink of the graph, taken for an output.
    std::optional<TensorRef> r;
    if (shape_.seq > 1 || state_h)
      r = transpose(direction_rows(2, d, g, h, "R"), {1, 0}, "R" + tag + ".T");
    direction_ = d;
    peepholes_.reset();
    if (cell_ == Cell::Lstm && !is_zero_constant(ctx_, input_name(node_, 7)))
      peepholes_ = ctx_.reshape(direction_rows(7, d, 1, 3 * h, "P"), {3 * h}, name("P" + tag));
    const bool backwards = reverse_only_ || d == 1;
    std::vector<TensorRef> steps(static_cast<std::size_t>(shape_.seq));
    for (std::int64_t i = 0; i < shape_.seq; ++i) {
      const std::int64_t t = backwards ? shape_.seq - 1 - i : i;
      const std::string at = tag + ".t" + std::to_string(t);
      const TensorRef xt = ctx_.reshape(ctx_.slice(xw, 0, t, t + 1, name("x" + at)),
                                        {shape_.batch, g}, name("x" + at + ".rows"));
      if (cell_ == Cell::Lstm)
        lstm_step(xt, r, state_h, state_c, at);
      else if (cell_ == Cell::Gru)
        gru_step(xt, r, rb, state_h, at);
      else
        rnn_step(xt, r, state_h, at);
      steps[static_cast<std::size_t>(t)] = *state_h;
    }
    std::vector<TensorRef> rows;
    for (std::int64_t t = 0; t < shape_.seq; ++t)
      rows.push_back(ctx_.reshape(steps[static_cast<std::size_t>(t)], {1, 1, shape_.batch, h},
                                  name("y" + tag + ".t" + std::to_string(t))));
    const TensorRef y = rows.size() == 1 ? rows.front()
                                         : ctx_.add(OpType::Concat, {{"axis", std::int64_t{0}}},
                                                    rows, name("Y" + tag));
    return {y, *state_h, state_c};
  }

  TensorRef linear(const std::vector<TensorRef>& inputs, std::int64_t out,
                   const std::string& what) {
    return ctx_.add(OpType::Linear, {{"out_features", out}}, inputs, name(what));
  }
  TensorRef gate(TensorRef all, int k, const std::string& what) {
    const std::int64_t h = shape_.hidden;
    return ctx_.slice(all, 1, k * h, (k + 1) * h, name(what));
  }
  TensorRef unary(OpType op, TensorRef a, const std::string& what) {
    return ctx_.add(op, {}, {a}, name(what));
  }
  TensorRef binary(OpType op, TensorRef a, TensorRef b, const std::string& what) {
    return ctx_.add(op, {}, {a, b}, name(what));
  }

  // Activation function k (f, g, h) of the current direction, as the operators Unity has.
  TensorRef activate(int k, TensorRef x, const std::string& what) {
    const Activation& a =
        activations_[static_cast<std::size_t>(direction_ * activation_count(cell_) + k)];
    const std::string n = what + "." + a.name;
    auto scalar = [&](OpType op, double value, TensorRef in, const std::string& tag) {
      return ctx_.add(op, {{"scalar", value}}, {in}, name(n + tag));
    };
    auto with = [&](OpType op, Attributes attrs) {
      return ctx_.add(op, std::move(attrs), {x}, name(n));
    };
    if (a.name == "Sigmoid") return unary(OpType::Sigmoid, x, n);
    if (a.name == "Tanh") return unary(OpType::Tanh, x, n);
    if (a.name == "Relu") return unary(OpType::Relu, x, n);
    if (a.name == "Softsign") return unary(OpType::Softsign, x, n);
    if (a.name == "Softplus") return unary(OpType::Softplus, x, n);
    if (a.name == "LeakyRelu") return with(OpType::LeakyRelu, {{"alpha", a.alpha.value_or(0.01)}});
    if (a.name == "ThresholdedRelu")
      return with(OpType::ThresholdedRelu, {{"alpha", a.alpha.value_or(1.0)}});
    if (a.name == "Elu") return with(OpType::Elu, {{"alpha", a.alpha.value_or(1.0)}});
    if (a.name == "HardSigmoid")
      return with(OpType::HardSigmoid,
                  {{"alpha", a.alpha.value_or(0.2)}, {"beta", a.beta.value_or(0.5)}});
    if (a.name == "ScaledTanh") {  // alpha tanh(beta x)
      const TensorRef inner = scalar(OpType::ScalarMul, a.beta.value_or(1.0), x, ".beta");
      return scalar(OpType::ScalarMul, a.alpha.value_or(1.0),
                    unary(OpType::Tanh, inner, n + ".tanh"), ".alpha");
    }
    // Affine: alpha x + beta.
    return scalar(OpType::ScalarAdd, a.beta.value_or(0.0),
                  scalar(OpType::ScalarMul, a.alpha.value_or(1.0), x, ".alpha"), ".beta");
  }

  // Gate k's pre-activation plus its peephole term p_k * c (LSTM with input P; P's order i, o, f).
  TensorRef peephole(TensorRef pre, int k, const std::optional<TensorRef>& c,
                     const std::string& what) {
    if (!peepholes_ || !c) return pre;
    const std::int64_t h = shape_.hidden;
    const TensorRef p = ctx_.slice(*peepholes_, 0, k * h, (k + 1) * h, name(what + ".P"));
    return binary(OpType::Add, pre, binary(OpType::Mul, *c, p, what + ".peep"), what + ".peephole");
  }

  // ONNX gate order i, o, f, c: c' = f(.) * c + f(.) * g(.), h' = o * h(c'); with peepholes, i and
  // f also see c and o sees c'.
  void lstm_step(TensorRef xt, const std::optional<TensorRef>& r, std::optional<TensorRef>& h,
                 std::optional<TensorRef>& c, const std::string& at) {
    TensorRef gates = xt;
    if (h)
      gates = binary(OpType::Add, xt, linear({*h, *r}, gates_ * shape_.hidden, "hR" + at),
                     "gates" + at);
    const TensorRef i = activate(0, peephole(gate(gates, 0, "i" + at), 0, c, "i" + at), "i" + at);
    const TensorRef cand = activate(1, gate(gates, 3, "c" + at), "c" + at);
    TensorRef next_c = binary(OpType::Mul, i, cand, "input" + at);
    if (c) {
      const TensorRef f = activate(0, peephole(gate(gates, 2, "f" + at), 2, c, "f" + at), "f" + at);
      next_c = binary(OpType::Add, binary(OpType::Mul, f, *c, "keep" + at), next_c, "C" + at);
    }
    const TensorRef o =
        activate(0, peephole(gate(gates, 1, "o" + at), 1, next_c, "o" + at), "o" + at);
    c = next_c;
    h = binary(OpType::Mul, o, activate(2, next_c, "C" + at), "H" + at);
  }

  // h' = f(x W + h R + Wb + Rb).
  void rnn_step(TensorRef xt, const std::optional<TensorRef>& r, std::optional<TensorRef>& h,
                const std::string& at) {
    TensorRef pre = xt;
    if (h) pre = binary(OpType::Add, xt, linear({*h, *r}, shape_.hidden, "hR" + at), "pre" + at);
    h = activate(0, pre, "H" + at);
  }

  // ONNX gate order z, r, h: n = tanh(xn + r * (h Rn + Rbn)) (linear_before_reset) or
  // tanh(xn + (r * h) Rn + Rbn); h' = (1 - z) * n + z * h = n + z * (h - n).
  void gru_step(TensorRef xt, const std::optional<TensorRef>& r, const std::optional<TensorRef>& rb,
                std::optional<TensorRef>& h, const std::string& at) {
    const std::int64_t hid = shape_.hidden;
    // The recurrent term [batch, 3h] (or the bias alone when the state is zero).
    std::optional<TensorRef> hr;
    if (h) {
      std::vector<TensorRef> in{*h, *r};
      if (rb) in.push_back(*rb);
      hr = linear(in, 3 * hid, "hR" + at);
    } else if (rb) {
      hr = *rb;
    }
    auto piece = [&](TensorRef all, int k, const std::string& what) {
      // A [3h] bias is cut along its only axis, a [batch, 3h] term along the second.
      if (ctx_.sizes(all).size() == 1)
        return ctx_.slice(all, 0, k * hid, (k + 1) * hid, name(what));
      return gate(all, k, what);
    };
    auto pre = [&](int k, const std::string& what) {
      const TensorRef xk = gate(xt, k, what + at);
      return hr ? binary(OpType::Add, xk, piece(*hr, k, what + at + ".h"), what + at + ".sum") : xk;
    };
    const TensorRef z = activate(0, pre(0, "z"), "z" + at);
    // The reset gate, where it is read: not in a first step from a zero state without
    // linear_before_reset (an unread gate would be a sink of the graph, taken for an output).
    auto reset = [&] { return activate(0, pre(1, "r"), "r" + at); };
    TensorRef n_in = gate(xt, 2, "n" + at);
    if (before_reset_ || !h) {
      // With a zero state both forms reduce to xn + r * Rbn (before reset) or xn + Rbn.
      if (hr) {
        const TensorRef hn = piece(*hr, 2, "n" + at + ".h");
        n_in = binary(OpType::Add, n_in,
                      before_reset_ ? binary(OpType::Mul, reset(), hn, "n" + at + ".reset") : hn,
                      "n" + at + ".sum");
      }
    } else {
      const TensorRef rn = ctx_.slice(*r, 1, 2 * hid, 3 * hid, name("Rn" + at));
      std::vector<TensorRef> in{binary(OpType::Mul, reset(), *h, "rh" + at), rn};
      if (rb) in.push_back(ctx_.slice(*rb, 0, 2 * hid, 3 * hid, name("Rbn" + at)));
      n_in = binary(OpType::Add, n_in, linear(in, hid, "rhR" + at), "n" + at + ".sum");
    }
    const TensorRef n = activate(1, n_in, "n" + at);
    if (h) {
      h = binary(OpType::Add, n,
                 binary(OpType::Mul, z, binary(OpType::Sub, *h, n, "hn" + at), "zhn" + at),
                 "H" + at);
    } else {
      h = binary(OpType::Sub, n, binary(OpType::Mul, z, n, "zn" + at), "H" + at);
    }
  }

  // Outputs nothing reads are not built: they would be sinks of the graph, taken for outputs.
  bool wanted(int k) const {
    if (node_.output_size() <= k || node_.output(k).empty()) return false;
    const std::string& out = node_.output(k);
    return !ctx_.model().consumers(out).empty() || ctx_.model().is_graph_output(out);
  }

  void bind_outputs(const std::vector<TensorRef>& ys, const std::vector<TensorRef>& hs,
                    const std::vector<TensorRef>& cs) {
    const std::int64_t b = shape_.batch, h = shape_.hidden;
    auto stack = [&](const std::vector<TensorRef>& parts, const std::string& what) {
      return parts.size() == 1
                 ? parts.front()
                 : ctx_.add(OpType::Concat, {{"axis", std::int64_t{0}}}, parts, name(what));
    };
    if (wanted(0)) {
      TensorRef y = ys.size() == 1 ? ys.front()
                                   : ctx_.add(OpType::Concat, {{"axis", std::int64_t{1}}}, ys,
                                              name("Y"));  // [seq, directions, batch, hidden]
      if (shape_.batch_first) y = transpose(y, {2, 0, 1, 3}, "Y.layout");
      ctx_.bind_tensor(node_.output(0), y);
    }
    auto final_state = [&](const std::vector<TensorRef>& parts, const std::string& what) {
      std::vector<TensorRef> rows;
      for (std::size_t d = 0; d < parts.size(); ++d)
        rows.push_back(ctx_.reshape(parts[d], {1, b, h}, name(what + std::to_string(d))));
      TensorRef t = stack(rows, what);  // [directions, batch, hidden]
      if (shape_.batch_first) t = transpose(t, {1, 0, 2}, what + ".layout");
      return t;
    };
    if (wanted(1)) ctx_.bind_tensor(node_.output(1), final_state(hs, "Y_h"));
    if (wanted(2)) ctx_.bind_tensor(node_.output(2), final_state(cs, "Y_c"));
  }

  ImportContext& ctx_;
  const ::onnx::NodeProto& node_;
  Cell cell_;
  std::string name_;
  int gates_;
  RecurrentShape shape_;
  bool reverse_only_ = false;
  bool before_reset_ = false;  // GRU's linear_before_reset
  std::vector<Activation> activations_;
  int direction_ = 0;                   // the direction being unrolled
  std::optional<TensorRef> peepholes_;  // LSTM's P of that direction, [3 hidden]
  std::map<int, TensorRef> rows_of_;    // per-direction views of W, R, B and the states, by slot
};

void map_lstm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  Unroller(ctx, node, Cell::Lstm).run();
}

void map_gru(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  Unroller(ctx, node, Cell::Gru).run();
}

void map_rnn(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  Unroller(ctx, node, Cell::Rnn).run();
}

}  // namespace

static void register_recurrent_ops(OnnxImports& table) {
  table["LSTM"] = map_lstm;
  table["GRU"] = map_gru;
  table["RNN"] = map_rnn;
}

UNITY_REGISTER_ONNX_IMPORTS(register_recurrent_ops)

}  // namespace unity::onnxio
