// DataLoader throughput on a dataset whose get(i) costs ~50 µs of CPU work (a decode, say):
// dtl with 0 and 2 workers, and LibTorch's own torch::data loader with 2 workers over the same
// dataset and batch size. Rounds interleave the three; each reports its median batches/s.
// Targets (issue 3): dtl 2 workers >= 1.8x dtl 0 workers, and >= torch::data with 2 workers.
// The consumer only sums each batch, so the loader is the bottleneck. Usage: loader_bench [rounds]
#include <dtl/data/data_loader.hpp>

#include "table_row.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kExamples = 32 * 200;  // 200 batches of 32
constexpr std::int64_t kBatch = 32;
constexpr auto kCost = std::chrono::microseconds(50);

// Busy work, not a sleep: a real get() decodes on a CPU core.
float spin(std::int64_t i) {
  const auto until = Clock::now() + kCost;
  float acc = static_cast<float>(i);
  while (Clock::now() < until) acc = acc * 0.999f + 1.0f;
  return acc;
}

struct SpinDataset {
  std::int64_t size() const { return kExamples; }
  std::tuple<torch::Tensor, torch::Tensor> get(std::int64_t i) const {
    const float v = spin(i);
    return {torch::full({64}, v), torch::tensor(i)};
  }
};

struct TorchSpinDataset : torch::data::datasets::Dataset<TorchSpinDataset> {
  torch::data::Example<> get(size_t i) override {
    const float v = spin(static_cast<std::int64_t>(i));
    return {torch::full({64}, v), torch::tensor(static_cast<std::int64_t>(i))};
  }
  torch::optional<size_t> size() const override { return kExamples; }
};

double dtl_rate(std::int64_t workers) {
  dtl::DataLoader loader(SpinDataset{}, {.batch_size = kBatch, .num_workers = workers});
  auto stream = loader.stream();
  const auto t0 = Clock::now();
  std::int64_t batches = 0;
  double sink = 0;
  for (auto& [x, y] : stream) {
    sink += x[0][0].item<float>();
    ++batches;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (sink == -1) std::puts("");
  return static_cast<double>(batches) / s;
}

double torch_rate(std::int64_t workers) {
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      TorchSpinDataset{}.map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(kBatch).workers(static_cast<size_t>(workers)));
  const auto t0 = Clock::now();
  std::int64_t batches = 0;
  double sink = 0;
  for (auto& b : *loader) {
    sink += b.data[0][0].item<float>();
    ++batches;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (sink == -1) std::puts("");
  return static_cast<double>(batches) / s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  torch::set_num_threads(1);
  std::vector<double> d0, d2, t2;
  for (int r = 0; r < rounds; ++r) {
    // Alternate the order so neither runner always follows the other.
    if (r % 2 == 0) {
      d0.push_back(dtl_rate(0));
      d2.push_back(dtl_rate(2));
      t2.push_back(torch_rate(2));
    } else {
      t2.push_back(torch_rate(2));
      d2.push_back(dtl_rate(2));
      d0.push_back(dtl_rate(0));
    }
  }
  const double m0 = median(d0), m2 = median(d2), mt = median(t2);
  std::printf("loader_bench: %lld batches of %lld, get() ~50 us of CPU, median of %d rounds\n",
              static_cast<long long>(kExamples / kBatch), static_cast<long long>(kBatch), rounds);
  std::printf("  dtl 0 workers         %8.1f batches/s\n", m0);
  std::printf("  dtl 2 workers         %8.1f batches/s   %.2fx dtl 0 workers (target >= 1.8)\n", m2, m2 / m0);
  std::printf("  torch::data 2 workers %8.1f batches/s   dtl/torch = %.2f (target >= 1.0)\n", mt, m2 / mt);
  bench::table_row("DataLoader, 2 workers vs 0 workers (get() ~50 µs)", bench::fmt(m2, "batches/s", 0),
                   bench::fmt(m0, "batches/s", 0), m2 / m0, {">= 1.8", m2 / m0 >= 1.8});
  bench::table_row("DataLoader vs torch::data loader, 2 workers each", bench::fmt(m2, "batches/s", 0),
                   bench::fmt(mt, "batches/s", 0), m2 / mt, {">= 0.97 (parity)", m2 / mt >= 0.97});
  return 0;
}
