// Mixed precision on this CPU (not a test): a training step of the 784-256-10 MLP (batch 64,
// SGD with momentum, cross entropy, 1 intra-op thread) in float32 and under a bfloat16 autocast
// region, each in rounds of its own; prints the medians, their ratio and the loss after the same
// number of steps from the same seed and data in both.
//   build-bench/bench/amp_bench [rounds] [steps per round]
#include <dtl/amp/autocast.hpp>

#include "table_row.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

torch::nn::Sequential mlp784() {
  torch::nn::Sequential m;
  m->push_back(torch::nn::Linear(784, 256));
  m->push_back(torch::nn::ReLU());
  m->push_back(torch::nn::Linear(256, 10));
  return m;
}

struct Run {
  std::vector<double> ms_per_step;  // one per round
  double final_loss = 0;
};

Run train(bool bf16, int rounds, int steps, const torch::Tensor& x, const torch::Tensor& y) {
  torch::manual_seed(23);
  auto model = mlp784();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  Run r;
  const auto n = x.size(0);
  std::int64_t step = 0;
  torch::Tensor loss;
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s, ++step) {
      const auto i = (step * 64) % n;
      {
        dtl::autocast region(torch::kCPU, std::nullopt, bf16);
        loss = torch::cross_entropy_loss(model->forward(x.narrow(0, i, 64)), y.narrow(0, i, 64));
      }
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (round > 0) r.ms_per_step.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / steps);
  }
  r.final_loss = loss.item<double>();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Whether /proc/cpuinfo lists the avx512_bf16 flag.
bool cpu_has_avx512_bf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return line.find(" avx512_bf16") != std::string::npos;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 40;
  at::set_num_threads(1);
  auto g = torch::make_generator<torch::CPUGeneratorImpl>(17);
  auto centers = torch::randn({10, 784}, g);
  auto y = torch::randint(0, 10, {4096}, g);
  auto x = centers.index_select(0, y) + 4.0 * torch::randn({4096, 784}, g);
  // float32 first: the helper that measured this saw float32 slow down right after a bf16 run.
  const auto f32 = train(false, rounds, steps, x, y);
  const auto bf16 = train(true, rounds, steps, x, y);
  const double a = median(f32.ms_per_step), b = median(bf16.ms_per_step);
  std::printf("784-256-10 MLP, batch 64, 1 thread, %d rounds x %d steps (after a warm-up round)\n", rounds, steps);
  std::printf("float32        %8.3f ms/step (median; range %.3f..%.3f)  loss after %d steps %.6f\n", a,
              *std::min_element(f32.ms_per_step.begin(), f32.ms_per_step.end()),
              *std::max_element(f32.ms_per_step.begin(), f32.ms_per_step.end()), (rounds + 1) * steps, f32.final_loss);
  std::printf("bf16 autocast  %8.3f ms/step (median; range %.3f..%.3f)  loss after %d steps %.6f\n", b,
              *std::min_element(bf16.ms_per_step.begin(), bf16.ms_per_step.end()),
              *std::max_element(bf16.ms_per_step.begin(), bf16.ms_per_step.end()), (rounds + 1) * steps, bf16.final_loss);
  std::printf("bf16 / float32 step time: %.2f\n", b / a);
  // Whether bf16 is fast depends on the CPU: with avx512_bf16 oneDNN runs it natively, without it
  // every bf16 op is emulated. The row says which CPU it measured.
  const std::string label = std::string("bf16 autocast vs float32 step, 784-256-10 MLP (") +
                            (cpu_has_avx512_bf16() ? "CPU with avx512_bf16" : "CPU without avx512_bf16: bf16 emulated") +
                            "; see mixed-precision.md)";
  bench::table_row(label, bench::fmt(b, "ms/step", 3), bench::fmt(a, "ms/step", 3), b / a);
}
