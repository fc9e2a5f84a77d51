// Einsum as the operators it stands for (MaxViT writes its attention as
// "BGHID,BGHJD->BGHIJ" and "BGHIJ,BGHJD->BGHID"). With two operands every letter is a batch letter
// (both operands and the output), a contracted one (both operands, not the output), a free letter
// of one operand (it and the output), or summed away in one operand (it alone): each operand is
// summed over its own summed letters, transposed to [batch..., free, contracted] (or [...,
// contracted, free]) with its free and contracted letters merged, multiplied (BatchMatMul, or
// MatMul without batch letters), and the product is reshaped and transposed to the output's order.
// One operand is a Transpose and a ReduceSum. An ellipsis ("...id,...jd->...ij", as attention
// written with einsum has it) stands for letters of its own, one per dim it covers, aligned from
// the right as numpy aligns them. A letter repeated within an operand (a diagonal) and more than
// two operands are named as unsupported.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "onnx/onnx_op_mapping.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

struct Equation {
  std::vector<std::string> operands;
  std::string output;
};

// The equation with each "..." written out as letters the equation does not use: an operand's
// covers the dims its letters leave (rank - letters), the last ones of the widest operand's, and
// an implicit output starts with all of them (numpy's rule).
std::string expand_ellipsis(const ::onnx::NodeProto& node, const std::string& text,
                            const std::vector<std::size_t>& ranks) {
  const std::string dots = "...";
  if (text.find(dots) == std::string::npos) return text;
  const auto arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  std::vector<std::string> operands;
  for (std::size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    operands.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (operands.size() != ranks.size())
    unsupported_use(node, "the equation's operands do not match the inputs");
  std::string unused;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (text.find(c) == std::string::npos) unused += c;
  for (char c = 'a'; c <= 'z'; ++c)
    if (text.find(c) == std::string::npos) unused += c;
  std::vector<std::size_t> covered(operands.size(), 0);
  std::size_t widest = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const auto at = operands[i].find(dots);
    if (at == std::string::npos) continue;
    const std::size_t letters = operands[i].size() - dots.size();
    if (ranks[i] < letters)
      unsupported_use(node,
                      fmt::format("operand {} ('{}') has rank {}, fewer dims than its letters", i,
                                  operands[i], ranks[i]));
    covered[i] = ranks[i] - letters;
    widest = std::max(widest, covered[i]);
  }
  if (widest > unused.size())
    unsupported_use(node, "the ellipsis covers more dims than there are letters to name them");
  const std::string all = unused.substr(0, widest);
  std::string out;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::string o = operands[i];
    if (const auto at = o.find(dots); at != std::string::npos)
      o.replace(at, dots.size(), all.substr(widest - covered[i]));
    out += (i ? "," : "") + o;
  }
  if (arrow != std::string::npos) {
    std::string result = text.substr(arrow + 2);
    if (const auto at = result.find(dots); at != std::string::npos)
      result.replace(at, dots.size(), all);
    return out + "->" + result;
  }
  // Implicit output: the ellipsis dims, then the letters that appear once, in alphabetical order.
  std::map<char, int> count;
  for (const auto& o : operands)
    for (char c : o)
      if (c != '.') ++count[c];
  std::string result = all;
  for (const auto& [c, n] : count)
    if (n == 1) result += c;
  return out + "->" + result;
}

Equation parse(const ::onnx::NodeProto& node, const std::vector<std::size_t>& ranks) {
  std::string written;
  for (char c : attr_string(node, "equation", ""))
    if (c != ' ') written += c;
  const std::string text = expand_ellipsis(node, written, ranks);
  Equation e;
  const auto arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  std::size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    e.operands.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.output = text.substr(arrow + 2);
  } else {
    // Implicit output: the letters that appear once, in alphabetical order.
    std::map<char, int> count;
    for (const auto& o : e.operands)
      for (char c : o) ++count[c];
    for (const auto& [c, n] : count)
      if (n == 1) e.output += c;
  }
  for (const auto& o : e.operands) {
    for (std::size_t i = 0; i < o.size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>(o[i])))
        unsupported_use(node, fmt::format("cannot read the equation '{}'", written));
      if (o.find(o[i], i + 1) != std::string::npos)
        unsupported_use(node, fmt::format("letter '{}' repeats within an operand of '{}' (a "
                                          "diagonal), which is not supported",
                                          o[i], written));
    }
  }
  return e;
}

class EinsumMapper {
 public:
  EinsumMapper(ImportContext& ctx, const ::onnx::NodeProto& node)
      : ctx_(ctx), node_(node), name_(node_name(node)) {}

  void run() {
    std::vector<std::size_t> ranks;
    for (const auto& input : node_.input()) ranks.push_back(ctx_.dims(input).size());
    const Equation e = parse(node_, ranks);
    if (static_cast<int>(e.operands.size()) != node_.input_size())
      unsupported_use(node_, "the equation's operands do not match the inputs");
    if (e.operands.size() > 2)
      unsupported_use(node_, "Einsum of more than two operands is not supported");
    std::vector<Term> terms;
    for (std::size_t i = 0; i < e.operands.size(); ++i) {
      Term t{ctx_.tensor(node_.input(static_cast<int>(i))), e.operands[i]};
      for (std::size_t k = 0; k < t.letters.size(); ++k)
        size_of_[t.letters[k]] = ctx_.sizes(t.value).at(k);
      // Letters only this operand has and the output lacks are summed here.
      std::string summed;
      for (char c : t.letters) {
        const bool elsewhere = std::any_of(
            e.operands.begin(), e.operands.end(),
            [&](const auto& o) { return &o != &e.operands[i] && o.find(c) != std::string::npos; });
        if (!elsewhere && e.output.find(c) == std::string::npos) summed += c;
      }
      terms.push_back(sum_over(t, summed, "sum" + std::to_string(i)));
    }
    const Term result = terms.size() == 1 ? terms.front() : product(terms[0], terms[1], e.output);
    ctx_.bind_tensor(node_.output(0), arrange(result, e.output, "out"));
  }

 private:
  struct Term {
    TensorRef value;
    std::string letters;  // one per dim
  };

  std::string name(const std::string& what) const { return name_ + "." + what; }

  Term sum_over(const Term& t, const std::string& summed, const std::string& what) {
    if (summed.empty()) return t;
    Ints axes;
    std::string kept;
    for (std::size_t k = 0; k < t.letters.size(); ++k) {
      if (summed.find(t.letters[k]) != std::string::npos)
        axes.push_back(static_cast<std::int64_t>(k));
      else
        kept += t.letters[k];
    }
    return {ctx_.add(OpType::ReduceSum, {{"axes", axes}, {"keepdims", std::int64_t{0}}}, {t.value},
                     name(what)),
            kept};
  }

  // t with its dims in the order of `order` (a permutation of its letters).
  TensorRef permuted(const Term& t, const std::string& order, const std::string& what) {
    if (order == t.letters) return t.value;
    Ints perm;
    for (char c : order) perm.push_back(static_cast<std::int64_t>(t.letters.find(c)));
    return ctx_.add(OpType::Transpose, {{"perm", perm}}, {t.value}, name(what));
  }

  std::int64_t size(const std::string& letters) const {
    std::int64_t n = 1;
    for (char c : letters) n *= size_of_.at(c);
    return n;
  }
  Ints sizes(const std::string& letters) const {
    Ints s;
    for (char c : letters) s.push_back(size_of_.at(c));
    return s;
  }

  Term product(const Term& a, const Term& b, const std::string& output) {
    std::string batch, free_a, free_b, contracted;
    for (char c : a.letters) {
      const bool in_b = b.letters.find(c) != std::string::npos;
      const bool in_out = output.find(c) != std::string::npos;
      if (in_b && in_out)
        batch += c;
      else if (in_b)
        contracted += c;
      else
        free_a += c;
    }
    for (char c : b.letters)
      if (a.letters.find(c) == std::string::npos) free_b += c;
    // [batch..., M, K] x [batch..., K, N] with M, K and N each merged into one dim.
    Ints lhs = sizes(batch), rhs = sizes(batch), merged = sizes(batch);
    lhs.insert(lhs.end(), {size(free_a), size(contracted)});
    rhs.insert(rhs.end(), {size(contracted), size(free_b)});
    const TensorRef x =
        ctx_.reshape(permuted(a, batch + free_a + contracted, "lhs"), lhs, name("lhs.rows"));
    const TensorRef y =
        ctx_.reshape(permuted(b, batch + contracted + free_b, "rhs"), rhs, name("rhs.rows"));
    const OpType op = batch.empty() ? OpType::MatMul : OpType::BatchMatMul;
    const TensorRef xy = ctx_.add(op, {}, {x, y}, name("product"));
    const std::string letters = batch + free_a + free_b;
    // A full contraction (`i,i`) is a scalar, which the PCG holds as one element of shape [1].
    if (letters.empty()) return {ctx_.reshape(xy, {1}, name("product.dims")), letters};
    return {ctx_.reshape(xy, sizes(letters), name("product.dims")), letters};
  }

  TensorRef arrange(const Term& t, const std::string& output, const std::string& what) {
    return permuted(t, output, what);
  }

  ImportContext& ctx_;
  const ::onnx::NodeProto& node_;
  std::string name_;
  std::map<char, std::int64_t> size_of_;
};

void map_einsum(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  EinsumMapper(ctx, node).run();
}

}  // namespace

static void register_einsum_ops(OnnxImports& table) { table["Einsum"] = map_einsum; }

UNITY_REGISTER_ONNX_IMPORTS(register_einsum_ops)

}  // namespace unity::onnxio
