// Distributed data parallelism on this machine (Gloo, one intra-op thread per process), in one
// run, rounds interleaved:
//   - throughput of 2 ranks vs 1 rank at the same per-slot batch (target >= 1.6x) on a
//     compute-bound MLP step (>= 20 ms);
//   - per step, how long backward waited on the gradient all-reduce, with the buckets launched
//     from the autograd hooks (overlap) vs all after backward (no overlap);
//   - one rank launched by torchrun vs the same binary alone (target <= 2% slower).
// Without WORLD_SIZE in its environment the program is the driver: it launches itself.
//   distributed_bench [rounds=3] [batches=40]
#include <dtl/trainer.hpp>

#include "table_row.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

extern char** environ;

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

/// DDP's first bucket is 1 MB; a bucket per layer is what lets communication overlap backward.
double bucket_mb() {
  const char* v = std::getenv("DTL_BENCH_BUCKET_MB");
  return v ? std::atof(v) : 1.0;
}

/// DTL_BENCH_MODEL=cnn: a small CNN on 28x28 images (60 K parameters: compute-bound, little to
/// communicate); otherwise the MLP (1.6 M parameters: 6.3 MB of gradients per step).
bool use_cnn() {
  const char* v = std::getenv("DTL_BENCH_MODEL");
  return v && std::string(v) == "cnn";
}

/// The training time proper: from on_training_start to the end of the (single) workload,
/// leaving out the final validation and checkpoint.
class Timer : public dtl::PyTorchCallback {
 public:
  explicit Timer(double& seconds) : seconds_(seconds) {}
  void on_training_start() override { t0_ = std::chrono::steady_clock::now(); }
  void on_training_workload_end(const dtl::MetricsJson&, const dtl::BatchMetrics&) override {
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  double& seconds_;
  std::chrono::steady_clock::time_point t0_;
};

class MlpTrial : public dtl::PyTorchTrial<MlpTrial> {
 public:
  MlpTrial(dtl::PyTorchTrialContext& ctx, bool overlap) : ctx_(ctx) {
    namespace nn = torch::nn;
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(1);
    if (use_cnn()) {
      model_ = ctx.wrap_model(
          nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                         nn::Conv2d(nn::Conv2dOptions(32, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                         nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                         nn::Flatten(), nn::Linear(64 * 7 * 7, 10)),
          {.bucket_cap_mb = bucket_mb(), .overlap = overlap});
      x_ = torch::randn({4096, 1, 28, 28}, g);
    } else {
      model_ = ctx.wrap_model(nn::Sequential(nn::Linear(512, 1024), nn::ReLU(), nn::Linear(1024, 1024), nn::ReLU(),
                                             nn::Linear(1024, 10)),
                              {.bucket_cap_mb = bucket_mb(), .overlap = overlap});
      x_ = torch::randn({4096, 512}, g);
    }
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)));
    y_ = torch::randint(0, 10, {4096}, g);
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_.narrow(0, 0, 2048), y_.narrow(0, 0, 2048)),
                           {.batch_size = ctx_.get_per_slot_batch_size()});
  }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto loss = torch::cross_entropy_loss(model_->forward(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    return {{"validation_loss", torch::cross_entropy_loss(model_->forward(std::get<0>(b)), std::get<1>(b))}};
  }
  dtl::Callbacks build_callbacks() {
    dtl::Callbacks c;
    c.emplace_back("timer", std::make_shared<Timer>(seconds));
    return c;
  }
  double seconds = 0;

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

/// DTL_BENCH_BATCH sets the per-slot batch (default 256): the larger, the more compute per
/// byte of gradient communicated.
std::int64_t per_slot_batch() {
  const char* v = std::getenv("DTL_BENCH_BATCH");
  return v ? std::atoll(v) : use_cnn() ? 64 : 256;
}

/// A worker: trains `batches` after a warm-up, prints (on the chief) one JSON line.
int worker(std::int64_t batches, bool overlap) {
  at::set_num_threads(1);
  const auto world = std::atoll(std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "1");
  const auto run = std::filesystem::temp_directory_path() /
                   ("dtl-dist-bench-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  auto ctx = dtl::init(
      dtl::InitOptions{.hparams = {{"global_batch_size", per_slot_batch() * world}}, .seed = 1, .run_dir = run});
  MlpTrial trial(ctx, overlap);
  dtl::Trainer trainer(trial, ctx);
  // Warm-up (allocator, first all-reduces), then a timed fit (from batch 0 again).
  trainer.fit({.max_length = dtl::Batch{5}, .reporting_period = dtl::Batch{1000000}, .quiet = true});
  trainer.fit({.max_length = dtl::Batch{batches},
               .reporting_period = dtl::Batch{1000000},
               .profiling_enabled = true,
               .quiet = true});
  const double secs = trial.seconds;
  if (ctx.distributed().is_chief()) {
    // The last training report's phase timings (allreduce_wait_seconds in a distributed run).
    nlohmann::json last;
    std::ifstream in(run / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["type"] == "training") last = j;
    }
    const double wait = last.contains("timings") ? last["timings"].value("allreduce_wait_seconds", 0.0) : 0.0;
    std::cout
        << nlohmann::json{{"world", world}, {"seconds", secs}, {"batches", batches}, {"wait_seconds", wait}}.dump()
        << std::endl;
  }
  std::filesystem::remove_all(run);
  return 0;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Runs `cmd` (through the shell) and returns every chief's JSON line.
std::vector<nlohmann::json> run_all(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = ::pclose(p);
  std::istringstream lines(out);
  std::vector<nlohmann::json> results;
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("{\"batches\"")) results.push_back(nlohmann::json::parse(line));
  if (results.empty() || rc != 0) {
    std::cerr << "benchmark command failed (status " << rc << "): " << cmd << "\n" << out << "\n";
    std::exit(1);
  }
  return results;
}
nlohmann::json run(const std::string& cmd) { return run_all(cmd).front(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string fmt(double x, int digits = 3) {
  std::ostringstream s;
  s.precision(digits);
  s << std::fixed << x;
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rounds = argc > 1 ? std::atoll(argv[1]) : 3;
  const std::int64_t batches = argc > 2 ? std::atoll(argv[2]) : 40;
  if (std::getenv("WORLD_SIZE")) return worker(batches, std::getenv("DTL_BENCH_NO_OVERLAP") == nullptr);

  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  const std::string args = " " + std::to_string(rounds) + " " + std::to_string(batches);
  // The same allocator settings for every contender: glibc's heap layout alone moves a GEMM step
  // by +-30% here (shared/reference/performance-notes.md).
  const std::string common =
      "OMP_NUM_THREADS=1 GLIBC_TUNABLES=glibc.malloc.trim_threshold=2000000000:glibc.malloc.mmap_threshold="
      "1000000000:glibc.malloc.top_pad=67108864 ";
  auto plain = [&](int world, bool overlap) {
    const auto port = std::to_string(free_port());
    std::string cmd = "(";
    for (int r = 0; r < world; ++r)
      cmd += common + (overlap ? "" : "DTL_BENCH_NO_OVERLAP=1 ") + "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
             " WORLD_SIZE=" + std::to_string(world) + " RANK=" + std::to_string(r) + " " + self + args +
             (r + 1 < world ? " & " : "; wait)");
    if (world == 1) cmd = common + "WORLD_SIZE=1 RANK=0 " + self + args;
    return run(cmd + " 2>&1");
  };
  // Two single processes side by side, no communication: what this machine's cores give two
  // concurrent trainings at all (the ceiling for 2 ranks; 2.0 on truly independent cores).
  auto independent = [&] {
    const std::string one = common + "WORLD_SIZE=1 RANK=0 " + self + args;
    const auto both = run_all("(" + one + " & " + one + "; wait) 2>&1");
    if (both.size() != 2) {
      std::cerr << "expected two results from the independent runs\n";
      std::exit(1);
    }
    return (both[0]["seconds"].get<double>() + both[1]["seconds"].get<double>()) / 2.0;
  };
  auto torchrun = [&] {
    return run(common + "torchrun --redirects 9:1 --tee 9:1 --nproc_per_node=1 --master_port=" +
               std::to_string(free_port()) + " --no_python " + self + args + " 2>&1");
  };
  const bool have_torchrun = std::system("command -v torchrun >/dev/null 2>&1") == 0;

  std::cout << (use_cnn() ? "CNN conv32-conv32-pool-conv64-pool-fc10 on 28x28 (60 K parameters)"
                          : "MLP 512-1024-1024-10 (1.6 M parameters)")
            << ", per-slot batch " << per_slot_batch() << ", " << batches
            << " timed batches, 1 intra-op thread per process, Gloo over loopback, buckets of " << bucket_mb()
            << " MB; " << rounds << " rounds\n";
  std::vector<double> speedup, step1, step2, wait_on, wait_off, torchrun_ratio, ceiling;
  for (std::int64_t r = 0; r < rounds; ++r) {
    // Rotate who goes first, so that drift in the machine's load does not favour one.
    std::vector<std::function<void()>> order;
    nlohmann::json one, two, two_off, tr;
    double side_by_side = 0;
    order.push_back([&] { one = plain(1, true); });
    order.push_back([&] { two = plain(2, true); });
    order.push_back([&] { two_off = plain(2, false); });
    order.push_back([&] { side_by_side = independent(); });
    if (have_torchrun) order.push_back([&] { tr = torchrun(); });
    std::rotate(order.begin(), order.begin() + (r % static_cast<std::int64_t>(order.size())), order.end());
    for (auto& f : order) f();
    const double s1 = one["seconds"].get<double>() / static_cast<double>(batches);
    const double s2 = two["seconds"].get<double>() / static_cast<double>(batches);
    step1.push_back(s1 * 1e3);
    step2.push_back(s2 * 1e3);
    speedup.push_back(2.0 * s1 / s2);  // examples per second: 2 ranks x per-slot batch per step
    ceiling.push_back(2.0 * one["seconds"].get<double>() / side_by_side);
    wait_on.push_back(two["wait_seconds"].get<double>() / static_cast<double>(batches) * 1e3);
    wait_off.push_back(two_off["wait_seconds"].get<double>() / static_cast<double>(batches) * 1e3);
    if (have_torchrun) torchrun_ratio.push_back(tr["seconds"].get<double>() / one["seconds"].get<double>());
    std::cout << "round " << r << ": 1 rank " << fmt(s1 * 1e3, 1) << " ms/step, 2 ranks " << fmt(s2 * 1e3, 1)
              << " ms/step (throughput x" << fmt(speedup.back(), 2) << "; 2 independent processes x"
              << fmt(ceiling.back(), 2) << "), all-reduce wait/step overlap "
              << fmt(wait_on.back(), 2) << " ms vs after-backward " << fmt(wait_off.back(), 2) << " ms"
              << (have_torchrun ? ", torchrun/alone " + fmt(torchrun_ratio.back()) : std::string()) << "\n";
  }
  std::cout << "median: 1-rank step " << fmt(median(step1), 1) << " ms; 2 ranks throughput x" << fmt(median(speedup), 2)
            << " [" << fmt(*std::min_element(speedup.begin(), speedup.end()), 2) << ".."
            << fmt(*std::max_element(speedup.begin(), speedup.end()), 2)
            << "] (target >= 1.6); two independent single processes side by side: x" << fmt(median(ceiling), 2)
            << " (the machine's ceiling for two)\n";
  std::cout << "median all-reduce wait per step: " << fmt(median(wait_on), 2) << " ms with overlap, "
            << fmt(median(wait_off), 2) << " ms without\n";
  if (have_torchrun)
    std::cout << "median torchrun 1 rank / alone: " << fmt(median(torchrun_ratio)) << " (target <= 1.02)\n";
  const double sp = median(speedup);
  const double per_slot = static_cast<double>(per_slot_batch());
  bench::table_row("Data parallel throughput, 2 ranks vs 1 (Gloo over loopback, the machine's 2 cores)",
                   bench::fmt(2.0 * per_slot / (median(step2) / 1e3), "examples/s", 0),
                   bench::fmt(per_slot / (median(step1) / 1e3), "examples/s", 0), sp, {">= 1.6", sp >= 1.6});
  bench::table_row("Two independent single processes side by side vs one (the machine's ceiling for 2 ranks)", "—",
                   "—", median(ceiling));
  if (have_torchrun)
    bench::table_row("torchrun, 1 rank vs the same binary alone (wall time)", "—", "—", median(torchrun_ratio),
                     {"<= 1.02", median(torchrun_ratio) <= 1.02});
  return 0;
}
