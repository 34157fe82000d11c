// Trainer overhead: the same model, data, order and optimizer trained by dtl's Trainer and by a
// hand-written LibTorch loop, alternating in one run on 1 intra-op thread. Reports the median
// per-batch time of each and their ratio (target: dtl within 2% of the hand-written loop).
// Rounds interleave the two and alternate which runs first. With --python=bench/python_loop.py,
// every round also runs the same hand-written loop in Python (python3-torch, the same LibTorch),
// as a child process under the same CPU affinity and environment.
// Second table: the cost of reporting. The tiny MLP under dtl returning 5 metrics (reported every
// 100 batches: metrics.jsonl, TensorBoard per-batch scalars, console) vs returning none, in the
// same interleaved way (target: < 1%).
// The dtl span runs from on_training_start to the last workload's end, so it includes metric
// collection and per-workload reporting (every 100 batches) but not the final validation and
// checkpoint, which a hand-written loop does not do at all.
// --only=hand|dtl [--shape=tiny|784] [--batches=N] [--warmup=W] [--metrics=0|1|5]: one loop, for N
// batches, printing its µs/batch (N and W default to a round's batches and warm-up below; dtl's
// train_batch returning 0, 1 (default) or 5 metrics): what
// bench/instruction_ratio.py runs under callgrind, where instruction counts (not times) compare the
// two loops without this shared machine's noise, and what bench/process_ratio.py times one process
// per run, so that each loop meets a heap and an address layout of its own.
// --device=cuda: both loops run on cuda:0, the data already there (sequential batches are views,
// no copies); each timed span ends after a device synchronize. The CPU is the default, also on a
// machine with a GPU.
#include <dtl/trainer.hpp>

#include "table_row.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

torch::Device bench_device = torch::kCPU;  // --device=

void sync_device() {
  if (bench_device.is_cuda()) torch::cuda::synchronize();
}

std::string on_gpu() { return bench_device.is_cuda() ? ", on the GPU" : ""; }

using Clock = std::chrono::steady_clock;
using Batch = std::tuple<torch::Tensor, torch::Tensor>;

struct Shape {
  const char* name;
  std::int64_t in, hidden, out, batch;
  std::int64_t batches;  ///< timed in one round; a quarter of it warms up
};

const Shape kShapes[] = {{"tiny MLP 32-32-2, batch 32", 32, 32, 2, 32, 4000},
                         {"MLP 784-256-10, batch 64", 784, 256, 10, 64, 1000}};

torch::nn::Sequential make_mlp(const Shape& s) {
  torch::manual_seed(0);
  torch::nn::Sequential m(torch::nn::Linear(s.in, s.hidden), torch::nn::ReLU(), torch::nn::Linear(s.hidden, s.out));
  m->to(bench_device);
  return m;
}

dtl::TensorDataset<2> make_data(const Shape& s, std::int64_t n) {
  torch::manual_seed(1);
  return dtl::TensorDataset(torch::randn({n, s.in}).to(bench_device), torch::randint(s.out, {n}).to(bench_device));
}

struct Span : dtl::PyTorchCallback {
  Clock::time_point start, end;
  void on_training_start() override { start = Clock::now(); }
  void on_training_workload_end(const dtl::MetricsJson&, const dtl::BatchMetrics&) override {
    sync_device();
    end = Clock::now();
  }
};

class BenchTrial : public dtl::PyTorchTrial<BenchTrial> {
 public:
  BenchTrial(dtl::PyTorchTrialContext& ctx, const Shape& s, dtl::TensorDataset<2> data, std::shared_ptr<Span> span,
             int metrics)
      : ctx_(ctx), s_(s), data_(std::move(data)), span_(std::move(span)), metrics_(metrics) {
    model_ = ctx.wrap_model(make_mlp(s));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)));
  }
  auto build_training_data_loader() { return dtl::DataLoader(data_, {.batch_size = s_.batch}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data_, {.batch_size = data_.size()}); }
  dtl::Callbacks build_callbacks() { return {{"span", span_}}; }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto& [x, y] = b;
    auto loss = torch::cross_entropy_loss(model_->forward(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    // The same device tensor under several names: what is measured is reporting, not computing.
    switch (metrics_) {
      case 0:
        return {};
      case 1:
        return {{"loss", loss}};
      default:
        return {{"loss", loss}, {"m1", loss}, {"m2", loss}, {"m3", loss}, {"m4", loss}};
    }
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    auto& [x, y] = b;
    return {{"validation_loss", torch::cross_entropy_loss(model_->forward(x), y)}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  Shape s_;
  dtl::TensorDataset<2> data_;
  std::shared_ptr<Span> span_;
  int metrics_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

double dtl_per_batch(const Shape& s, const dtl::TensorDataset<2>& data, std::int64_t batches, int metrics = 1) {
  auto dir = std::filesystem::temp_directory_path() / "dtl-bench-run";
  std::filesystem::remove_all(dir);
  auto ctx = dtl::init({.seed = 0, .device = bench_device, .run_dir = dir});
  auto span = std::make_shared<Span>();
  BenchTrial trial(ctx, s, data, span, metrics);
  std::streambuf* old = std::cout.rdbuf(nullptr);  // the console summary is not what we time
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{batches}, .checkpoint_policy = dtl::CheckpointPolicy::none});
  std::cout.rdbuf(old);
  std::filesystem::remove_all(dir);
  return std::chrono::duration<double, std::micro>(span->end - span->start).count() / static_cast<double>(batches);
}

/// What a LibTorch user writes by hand: the same order and optimizer, each batch a view of the
/// data (`narrow`: sequential batches need no copy); the loss stays on the device (no .item()
/// per batch), as dtl keeps it.
double hand_per_batch(const Shape& s, const dtl::TensorDataset<2>& data, std::int64_t batches) {
  auto model = make_mlp(s);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const auto& [x_all, y_all] = data.tensors();
  const std::int64_t n = x_all.size(0);
  const std::int64_t per_epoch = (n + s.batch - 1) / s.batch;
  std::vector<torch::Tensor> losses;
  losses.reserve(100);
  const auto t0 = Clock::now();
  for (std::int64_t b = 0; b < batches; ++b) {
    const std::int64_t first = (b % per_epoch) * s.batch;
    const std::int64_t len = std::min(s.batch, n - first);
    auto x = x_all.narrow(0, first, len);
    auto y = y_all.narrow(0, first, len);
  auto loss = torch::cross_entropy_loss(model->forward(x), y);
    loss.backward();
    opt.step();
    opt.zero_grad();
    losses.push_back(loss.detach());
    if (losses.size() == 100) {  // report a mean every 100 batches, as the hand-written loop would log
      volatile double sink = torch::stack(losses).mean().item<double>();
      (void)sink;
      losses.clear();
    }
  }
  sync_device();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / static_cast<double>(batches);
}

/// The same loop in Python: one child process, which times itself after a warm-up.
double python_per_batch(const std::string& interpreter, const std::string& script, const Shape& s,
                        std::int64_t batches) {
  const std::string cmd = interpreter + " " + script + " " + std::to_string(s.in) + " " + std::to_string(s.hidden) +
                          " " + std::to_string(s.out) + " " + std::to_string(s.batch) + " " + std::to_string(batches);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run " + cmd);
  double us = 0;
  const int got = std::fscanf(p, "%lf", &us);
  if (::pclose(p) != 0 || got != 1) throw std::runtime_error("failed: " + cmd);
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  int rounds = 7;
  std::string python;  // --python=SCRIPT: also time the loop in Python
  // --interpreter=PY: the Python whose torch is this LibTorch (Debian's /usr/bin/python3 for 1.13)
  std::string interpreter = "/usr/bin/python3";
  std::string only, shape = "tiny";  // --only=hand|dtl: one loop (bench/instruction_ratio.py, process_ratio.py)
  std::int64_t only_batches = -1, only_warmup = -1;  // -1: the shape's
  int only_metrics = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--python=", 0) == 0) python = a.substr(9);
    else if (a.rfind("--only=", 0) == 0) only = a.substr(7);
    else if (a.rfind("--batches=", 0) == 0) only_batches = std::atoll(a.c_str() + 10);
    else if (a.rfind("--shape=", 0) == 0) shape = a.substr(8);
    else if (a.rfind("--warmup=", 0) == 0) only_warmup = std::atoll(a.c_str() + 9);
    else if (a.rfind("--metrics=", 0) == 0) only_metrics = std::atoi(a.c_str() + 10);
    else if (a.rfind("--interpreter=", 0) == 0) interpreter = a.substr(14);
    else if (a.rfind("--device=", 0) == 0) bench_device = torch::Device(a.substr(9));
    else rounds = std::atoi(a.c_str());
  }
  if (!only.empty()) {
    const Shape& s = kShapes[shape == "784" ? 1 : 0];
    if (only != "dtl" && only != "hand") throw std::invalid_argument("--only takes hand or dtl, not " + only);
    if (only_batches < 0) only_batches = s.batches;
    if (only_warmup < 0) only_warmup = s.batches / 4;
    auto data = make_data(s, s.batch * 100);
    const auto run = [&](std::int64_t n) {
      return only == "dtl" ? dtl_per_batch(s, data, n, only_metrics) : hand_per_batch(s, data, n);
    };
    if (only_warmup > 0) run(only_warmup);
    const double us = run(only_batches);
    std::printf("%s %s %lld batches: %.2f us/batch\n", only.c_str(), s.name, static_cast<long long>(only_batches), us);
    return 0;
  }
  std::cout << "LibTorch " << TORCH_VERSION << "\n";
  std::cout << at::get_parallel_info() << "device: " << bench_device << "\n";
  std::printf("%-30s %12s %12s %8s\n", "model", "hand us/b", "dtl us/b", "ratio");
  std::vector<std::function<void()>> rows;  // the table rows, printed after the human-readable part
  for (const auto& s : kShapes) {
    const std::int64_t batches = s.batches;
    auto data = make_data(s, s.batch * 100);
    hand_per_batch(s, data, batches / 4);  // warm-up
    dtl_per_batch(s, data, batches / 4);
    std::vector<double> hand, mine, py;
    for (int r = 0; r < rounds; ++r) {  // interleaved, and who goes first alternates: drift hits both
      if (r % 2 == 0) {
        hand.push_back(hand_per_batch(s, data, batches));
        mine.push_back(dtl_per_batch(s, data, batches));
      } else {
        mine.push_back(dtl_per_batch(s, data, batches));
        hand.push_back(hand_per_batch(s, data, batches));
      }
      if (!python.empty()) py.push_back(python_per_batch(interpreter, python, s, batches));
    }
    const double h = median(hand), d = median(mine);
    std::printf("%-30s %12.2f %12.2f %8.3f\n", s.name, h, d, d / h);
    rows.push_back([=] {
      bench::table_row(std::string("Trainer vs hand-written LibTorch loop, ") + s.name + on_gpu(), bench::fmt(d, "µs/batch"),
                       bench::fmt(h, "µs/batch"), d / h, {"<= 1.02", d / h <= 1.02});
    });
    if (!py.empty()) {
      const double p = median(py);
      std::printf("%-30s %12s %12.2f %8.3f   (the same loop in Python: %.2f us/batch)\n", "", "python", d, d / p, p);
      rows.push_back([=] {
        bench::table_row(std::string("Trainer vs the same loop in Python (the same torch), ") + s.name,
                         bench::fmt(d, "µs/batch"), bench::fmt(p, "µs/batch"), d / p, {"< 1", d / p < 1});
      });
    }
  }

  const Shape& tiny = kShapes[0];
  auto data = make_data(tiny, tiny.batch * 100);
  std::vector<double> none, five;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      none.push_back(dtl_per_batch(tiny, data, tiny.batches, 0));
      five.push_back(dtl_per_batch(tiny, data, tiny.batches, 5));
    } else {
      five.push_back(dtl_per_batch(tiny, data, tiny.batches, 5));
      none.push_back(dtl_per_batch(tiny, data, tiny.batches, 0));
    }
  }
  std::printf("\n%-30s %12s %12s %8s\n", "reporting (tiny MLP)", "0 metrics", "5 metrics", "ratio");
  std::printf("%-30s %12.2f %12.2f %8.3f\n", "every 100 batches, us/batch", median(none), median(five),
              median(five) / median(none));
  for (const auto& row : rows) row();
  const double five_over_none = median(five) / median(none);
  bench::table_row(std::string("5 metrics reported vs none (tiny MLP, every 100 batches)") + on_gpu(), bench::fmt(median(five), "µs/batch"),
                   bench::fmt(median(none), "µs/batch"), five_over_none, {"< 1.01", five_over_none < 1.01});
}
