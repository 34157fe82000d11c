// TensorBoard writer benchmark (not a test): the cost of one add_scalar, to compare with a training
// step (~100 µs for the smallest model in docs/benchmarks.md, ~8 ms for the flagship CNN).
//   g++-12 -std=c++20 -O2 -Iinclude bench/tensorboard_bench.cpp -o tensorboard_bench && ./tensorboard_bench
// 1. SummaryWriter::add_scalar, 10^6 calls, default options (a write(2) per 1000 records), and
//    with torch's max_queue = 10 for comparison.
// 2. write_training_metrics with Determined's tags, 3 metrics per batch (a per-batch report).
// 3. The parts: encoding + framing alone (no clock, no I/O), and CRC32C throughput.
// Each figure is the median of 5 runs; files go to a temporary directory, removed at the end.
#include <dtl/log/tensorboard.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr int runs = 5;
constexpr std::int64_t scalars = 1'000'000;

// Keeps the optimizer from dropping work whose result is otherwise unused.
volatile std::uint64_t sink = 0;

template <class F>
double median_seconds(F&& f) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = clock_type::now();
    f(r);
    t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("dtl_tensorboard_bench_" + std::to_string(rd()));
  std::uintmax_t bytes = 0;

  // 1. add_scalar through the writer, file I/O included.
  const auto add_scalar_run = [&](dtl::SummaryWriterOptions options) {
    return median_seconds([&](int r) {
      dtl::SummaryWriter w(dir / ("q" + std::to_string(options.max_queue) + "_" + std::to_string(r)), options);
      for (std::int64_t i = 0; i < scalars; ++i) w.add_scalar("Determined/loss", 1.0 / double(i + 1), i);
      w.close();
      bytes = fs::file_size(w.file_path());
    });
  };
  const double t_default = add_scalar_run({});
  const double t_torch_queue = add_scalar_run({.max_queue = 10});

  // 2. Per-batch training metrics with Determined's tags.
  const dtl::ScalarMetrics batch{{"loss", 0.25}, {"accuracy", 0.75}, {"lr", 0.01}};
  constexpr std::int64_t batches = scalars / 3;
  const double t_metrics = median_seconds([&](int r) {
    dtl::SummaryWriter w(dir / ("metrics_" + std::to_string(r)));
    for (std::int64_t i = 0; i < batches; ++i) w.write_training_metrics(batch, i);
    w.close();
  });

  // 3a. Encoding + framing only, into a buffer that is reset every 1000 records.
  std::string buffer;
  const double t_encode = median_seconds([&](int) {
    for (std::int64_t i = 0; i < scalars; ++i) {
      if (i % 1000 == 0) buffer.clear();
      dtl::detail::append_scalar_record(buffer, 1.7e9 + double(i), i, "Determined/", "loss", 1.0f / float(i + 1));
    }
    sink = sink + buffer.size();
  });

  // 3b. CRC32C over 64 MiB.
  std::string data(64u << 20, '\0');
  std::mt19937 rng(1);
  for (char& c : data) c = static_cast<char>(rng());
  const double t_crc = median_seconds([&](int) { sink = sink + dtl::detail::crc32c(data); });

  std::error_code ec;
  fs::remove_all(dir, ec);

  const double ns_default = t_default / scalars * 1e9;
  const double ns_torch_queue = t_torch_queue / scalars * 1e9;
  const double ns_metrics = t_metrics / batches * 1e9;
  const double ns_encode = t_encode / scalars * 1e9;
  const double record_bytes = double(bytes) / double(scalars);  // the file_version record is noise
  std::printf("TensorBoard writer, %lld scalars, median of %d runs\n", static_cast<long long>(scalars), runs);
  std::printf("  add_scalar, default (write every 1000 records) : %7.1f ns/scalar  (%.0f bytes/record)\n", ns_default,
              record_bytes);
  std::printf("  add_scalar, max_queue = 10 (torch's default)   : %7.1f ns/scalar\n", ns_torch_queue);
  std::printf("  write_training_metrics, 3 metrics per batch    : %7.1f ns/batch\n", ns_metrics);
  std::printf("  encode + frame only (no clock, no I/O)         : %7.1f ns/scalar\n", ns_encode);
  std::printf("  crc32c (slicing-by-8)                          : %7.2f GB/s\n", double(data.size()) / t_crc / 1e9);
  std::printf("  per-batch report vs a 100 us training step     : %7.3f%%\n", ns_metrics / 100e3 * 100.0);
  return 0;
}
