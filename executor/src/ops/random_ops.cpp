// Random on the host: each task draws its piece's numbers by the elements' indices in the whole
// tensor (global_numbering, unity/core/ops/random_values.h), so every split and copy holds the
// one-rank run's numbers, and uploads them in the output's type. Bernoulli reads its
// probabilities first. No backward: the numbers do not depend on the input's values (Bernoulli's
// draw is a step in p), so no gradient flows to it.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/random_values.h"

namespace unity::executor::detail {
namespace {

namespace rv = random_values;

class RandomRunner final : public OpRunner {
 public:
  explicit RandomRunner(const Node& n) : f_(rv::random_function(n.op)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const DropoutSpec numbering = global_numbering(ctx, *t.out[0]);
      std::vector<double> p;
      if (f_.distribution == rv::Distribution::Bernoulli) p = host_doubles(be, *t.in[0]);
      std::vector<double> out(static_cast<std::size_t>(t.out[0]->elements()));
      for_global(numbering, [&](i64 i, i64 g) {
        const auto at = static_cast<std::size_t>(i);
        out[at] = rv::draw(f_, numbering.seed, g, p.empty() ? 0.0 : p[at]);
      });
      upload_doubles(be, *t.out[0], out);
    }
  }

  void backward(StepContext&, std::vector<TaskBuffers>&) override {}

 private:
  rv::RandomFunction f_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_random_runner(const Graph&, const Node& n) {
  return std::make_unique<RandomRunner>(n);
}

UNITY_REGISTER_KERNEL(make_random_runner, OpType::Random)

}  // namespace unity::executor::detail
