// LR scheduler step cost (not a test): nanoseconds per step per param group for every dtl::lr
// scheduler, against a hand-written loop that multiplies each group's lr in place (the least a
// scheduler step can do through LibTorch's options), and heap allocations per step once built.
// Target: < 1 µs per step per group, 0 allocations.
//   build-bench/bench/lr_scheduler_bench
#include <dtl/lr_schedulers.hpp>

#include "alloc_counter.hpp"
#include "table_row.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>


namespace {

using Opt = std::shared_ptr<torch::optim::SGD>;
using clock_type = std::chrono::steady_clock;

Opt make_sgd(int groups) {
  std::vector<torch::optim::OptimizerParamGroup> gs;
  for (int i = 0; i < groups; ++i)
    gs.emplace_back(std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())},
                    std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.1).momentum(0.9)));
  return std::make_shared<torch::optim::SGD>(std::move(gs), torch::optim::SGDOptions(0.1));
}

struct Result {
  double ns_per_group_step;
  double allocs_per_step;
};

template <class Step>
Result measure(int groups, int steps, Step&& step) {
  for (int i = 0; i < 1000; ++i) step();  // warm up
  const auto a0 = bench::allocations;
  const auto t0 = clock_type::now();
  for (int i = 0; i < steps; ++i) step();
  const auto t1 = clock_type::now();
  const auto a1 = bench::allocations;
  return {std::chrono::duration<double, std::nano>(t1 - t0).count() / steps / groups,
          static_cast<double>(a1 - a0) / steps};
}

}  // namespace

int main() {
  constexpr int steps = 200000;
  std::printf("%-28s %7s %14s %10s %12s\n", "scheduler", "groups", "ns/step/group", "vs loop", "allocs/step");
  for (int groups : {1, 8}) {
    auto base_opt = make_sgd(groups);
    const auto loop = measure(groups, steps, [&] {
      for (auto& g : base_opt->param_groups()) g.options().set_lr(g.options().get_lr() * 0.9999999);
    });
    std::printf("%-28s %7d %14.1f %10s %12.2f\n", "hand-written loop", groups, loop.ns_per_group_step, "1.00",
                loop.allocs_per_step);
    using namespace dtl::lr;
    const std::vector<std::pair<std::string, std::function<std::shared_ptr<LRScheduler>(const Opt&)>>> kinds = {
        {"StepLR", [](const Opt& o) { return std::make_shared<StepLR>(o, 1000, 0.9); }},
        {"MultiStepLR", [](const Opt& o) { return std::make_shared<MultiStepLR>(o, std::vector<std::int64_t>{1000, 5000, 90000}); }},
        {"ExponentialLR", [](const Opt& o) { return std::make_shared<ExponentialLR>(o, 0.9999999); }},
        {"CosineAnnealingLR", [](const Opt& o) { return std::make_shared<CosineAnnealingLR>(o, 50000, 1e-4); }},
        {"CosineAnnealingWarmRestarts", [](const Opt& o) { return std::make_shared<CosineAnnealingWarmRestarts>(o, 1000, 2); }},
        {"LinearLR", [](const Opt& o) { return std::make_shared<LinearLR>(o, 0.1, 1.0, 100000); }},
        {"PolynomialLR", [](const Opt& o) { return std::make_shared<PolynomialLR>(o, 1000000, 2.0); }},
        {"LambdaLR", [](const Opt& o) { return std::make_shared<LambdaLR>(o, [](std::int64_t e) { return 1.0 / (1.0 + 1e-6 * static_cast<double>(e)); }); }},
        {"OneCycleLR", [](const Opt& o) { return std::make_shared<OneCycleLR>(o, OneCycleLROptions{.max_lr = 0.1, .total_steps = 1000000}); }},
        {"CyclicLR", [](const Opt& o) { return std::make_shared<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 500}); }},
        {"SequentialLR(Linear,Cosine)", [](const Opt& o) {
           return std::make_shared<SequentialLR>(o, std::vector<std::shared_ptr<LRScheduler>>{std::make_shared<LinearLR>(o, 0.1, 1.0, 500), std::make_shared<CosineAnnealingLR>(o, 500000)},
                                                 std::vector<std::int64_t>{500});
         }},
    };
    double worst = 0, worst_ratio = 0;
    std::string worst_name;
    for (const auto& [name, make] : kinds) {
      auto opt = make_sgd(groups);
      auto s = make(opt);
      const auto r = measure(groups, steps, [&] { s->step(); });
      if (r.ns_per_group_step > worst) {
        worst = r.ns_per_group_step;
        worst_ratio = r.ns_per_group_step / loop.ns_per_group_step;
        worst_name = name;
      }
      std::printf("%-28s %7d %14.1f %10.2f %12.2f\n", name.c_str(), groups, r.ns_per_group_step,
                  r.ns_per_group_step / loop.ns_per_group_step, r.allocs_per_step);
    }
    std::printf("worst with %d group(s): %.1f ns per step per group (target < 1000)\n\n", groups, worst);
    bench::table_row("Slowest LR scheduler step (" + worst_name + ", " + std::to_string(groups) +
                         " group(s)) vs a loop that scales each lr",
                     bench::fmt(worst, "ns/group"), bench::fmt(loop.ns_per_group_step, "ns/group"), worst_ratio,
                     {"< 1000 ns/group", worst < 1000});
  }
}
