// The GPU side by side's C++ contenders (bench/gpu_side_by_side.py runs each as a fresh process,
// rounds interleaved, and prints the ratios): one training run of a model on data synthesized on
// the device, timed per step after a warm-up.
//
//   gpu_step --runner=dtl|hand --model=mlp|cnn --optimizer=adam|sgd
//            [--impl=default|single|foreach|fused|graphs] [--batches=N] [--warmup=W] [--device=cuda]
//
// Models, the same in bench/gpu_step.py:
//   mlp: 24 Linear(512, 512) with ReLU between (48 parameter tensors), batch 256, 10 classes
//        (the last layer's first 10 outputs), cross-entropy;
//   cnn: the flagship's Net (examples/fashion_mnist.cpp: conv 16, conv 32, fc 128, dropout 0.25),
//        batch 64 of 1x28x28, nll_loss of log_softmax.
// Optimizers: Adam lr 1e-3; SGD lr 0.05 momentum 0.9. `dtl` wraps them with OptimizerOptions
// from --impl (default: torch.optim's default, foreach on CUDA; graphs: FitOptions::cuda_graphs,
// the step captured and replayed, its optimizer capturable); `hand` is a LibTorch user's loop
// with LibTorch's own optimizer (per-tensor kernels), `--impl` ignored.
// The dtl run reports every 100 batches (metrics.jsonl, TensorBoard), its loss returned as a metric.
// Prints one line: {"runner":..., "ms_per_step":..., "steps":...}.
#include <dtl/trainer.hpp>

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <unistd.h>
#include <iostream>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;
using Batch = std::tuple<torch::Tensor, torch::Tensor>;

struct Args {
  std::string runner = "dtl", model = "mlp", optimizer = "adam", impl = "default", device = "cuda";
  std::int64_t batches = 400, warmup = 100;
};

struct CnnImpl : torch::nn::Module {
  CnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3)))),
        fc1(register_module("fc1", torch::nn::Linear(32 * 5 * 5, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))),
        drop(register_module("drop", torch::nn::Dropout(0.25))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = drop(torch::relu(fc1(x.flatten(1))));
    return torch::log_softmax(fc2(x), 1);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
  torch::nn::Dropout drop;
};
TORCH_MODULE(Cnn);

struct Model {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;
};

Model make_model(const Args& a, const torch::Device& dev) {
  if (a.model == "cnn") {
    Cnn m;
    m->to(dev);
    return {m.ptr(), [m](const torch::Tensor& x, const torch::Tensor& y) mutable { return torch::nll_loss(m(x), y); }};
  }
  torch::nn::Sequential m;
  for (int i = 0; i < 24; ++i) {
    m->push_back(torch::nn::Linear(512, 512));
    if (i + 1 < 24) m->push_back(torch::nn::ReLU());
  }
  m->to(dev);
  return {m.ptr(), [m](const torch::Tensor& x, const torch::Tensor& y) mutable {
            return torch::cross_entropy_loss(m->forward(x).narrow(1, 0, 10), y);
          }};
}

/// Data on the device: 8 batches' worth, cycled (what is timed is the step, not a loader).
std::pair<torch::Tensor, torch::Tensor> make_data(const Args& a, const torch::Device& dev, std::int64_t& batch) {
  torch::manual_seed(0);
  batch = a.model == "cnn" ? 64 : 256;
  const auto n = 8 * batch;
  auto x = a.model == "cnn" ? torch::randn({n, 1, 28, 28}) : torch::randn({n, 512});
  return {x.to(dev), torch::randint(10, {n}).to(dev)};
}

std::shared_ptr<torch::optim::Optimizer> plain_optimizer(const Args& a, torch::nn::Module& m) {
  if (a.optimizer == "sgd")
    return std::make_shared<torch::optim::SGD>(m.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  return std::make_shared<torch::optim::Adam>(m.parameters(), torch::optim::AdamOptions(1e-3));
}

void sync(const torch::Device& dev) {
  if (dev.is_cuda()) torch::cuda::synchronize(dev.index() < 0 ? 0 : dev.index());
}

double hand(const Args& a, const torch::Device& dev) {
  torch::manual_seed(1);
  auto model = make_model(a, dev);
  auto opt = plain_optimizer(a, *model.module);
  std::int64_t batch = 0;
  auto [x, y] = make_data(a, dev, batch);
  const auto per_epoch = x.size(0) / batch;
  Clock::time_point t0;
  std::vector<torch::Tensor> losses;
  for (std::int64_t b = 0; b < a.warmup + a.batches; ++b) {
    if (b == a.warmup) {
      sync(dev);
      t0 = Clock::now();
    }
    const auto first = (b % per_epoch) * batch;
    auto loss = model.loss(x.narrow(0, first, batch), y.narrow(0, first, batch));
    loss.backward();
    opt->step();
    opt->zero_grad();
    losses.push_back(loss.detach());
    if (losses.size() == 100) {  // the loss logged every 100 batches, as the Trainer reports
      (void)torch::stack(losses).mean().item<double>();
      losses.clear();
    }
  }
  sync(dev);
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / static_cast<double>(a.batches);
}

struct Span : dtl::PyTorchCallback {
  torch::Device dev;
  std::int64_t warmup;
  std::int64_t seen = 0;
  Clock::time_point start, end;
  Span(torch::Device d, std::int64_t w) : dev(d), warmup(w) {}
  void on_training_workload_end(const dtl::MetricsJson&, const dtl::BatchMetrics& b) override {
    seen += static_cast<std::int64_t>(b.size());
    sync(dev);
    if (seen == warmup) start = Clock::now();
    end = Clock::now();
  }
};

class StepTrial : public dtl::PyTorchTrial<StepTrial> {
 public:
  StepTrial(dtl::PyTorchTrialContext& ctx, const Args& a, std::shared_ptr<Span> span)
      : ctx_(ctx), a_(a), span_(std::move(span)), model_(make_model(a, ctx.device())) {
    ctx.wrap_model(model_.module);
    dtl::OptimizerOptions o;
    if (a.impl == "fused") o.fused = true;
    if (a.impl == "foreach") o.foreach = true;
    if (a.impl == "single") o.foreach = false;
    if (a.optimizer == "sgd")
      opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_.module->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)), o);
    else
      opt_ = ctx.wrap_optimizer(torch::optim::Adam(model_.module->parameters(), torch::optim::AdamOptions(1e-3)), o);
    std::int64_t batch = 0;
    auto [x, y] = make_data(a, ctx.device(), batch);
    data_.emplace(x, y);
    batch_ = batch;
  }
  auto build_training_data_loader() { return dtl::DataLoader(*data_, {.batch_size = batch_}); }
  auto build_validation_data_loader() { return dtl::DataLoader(*data_, {.batch_size = batch_}); }
  dtl::Callbacks build_callbacks() { return {{"span", span_}}; }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto& [x, y] = b;
    auto loss = model_.loss(x, y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    auto& [x, y] = b;
    return {{"validation_loss", model_.loss(x, y)}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  Args a_;
  std::shared_ptr<Span> span_;
  Model model_;
  std::shared_ptr<torch::optim::Optimizer> opt_;
  std::optional<dtl::TensorDataset<2>> data_;
  std::int64_t batch_ = 0;
};

double with_dtl(const Args& a, const torch::Device& dev) {
  auto dir = std::filesystem::temp_directory_path() / ("dtl-gpu-step-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto ctx = dtl::init({.seed = 1, .device = dev, .run_dir = dir});
  auto span = std::make_shared<Span>(dev, a.warmup);
  StepTrial trial(ctx, a, span);
  std::streambuf* old = std::cout.rdbuf(nullptr);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{a.warmup + a.batches},
                                .checkpoint_policy = dtl::CheckpointPolicy::none,
                                .cuda_graphs = a.impl == "graphs"});
  std::cout.rdbuf(old);
  std::filesystem::remove_all(dir);
  return std::chrono::duration<double, std::milli>(span->end - span->start).count() / static_cast<double>(a.batches);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto val = [&](const char* key) -> std::optional<std::string> {
      const std::string k = std::string("--") + key + "=";
      if (s.rfind(k, 0) == 0) return s.substr(k.size());
      return std::nullopt;
    };
    if (auto v = val("runner")) a.runner = *v;
    else if (auto v = val("model")) a.model = *v;
    else if (auto v = val("optimizer")) a.optimizer = *v;
    else if (auto v = val("impl")) a.impl = *v;
    else if (auto v = val("device")) a.device = *v;
    else if (auto v = val("batches")) a.batches = std::stoll(*v);
    else if (auto v = val("warmup")) a.warmup = std::stoll(*v);
    else {
      std::cerr << "gpu_step: unknown argument " << s << " (see the top of bench/gpu_step.cpp)\n";
      return 2;
    }
  }
  if (a.warmup % 100 != 0 || a.batches % 100 != 0) {
    std::cerr << "gpu_step: --warmup and --batches must be multiples of 100 (the reporting period)\n";
    return 2;
  }
  torch::Device dev(a.device);
  if (dev.is_cuda() && !torch::cuda::is_available()) {
    std::cerr << "gpu_step: no CUDA device\n";
    return 2;
  }
  const double ms = a.runner == "hand" ? hand(a, dev) : with_dtl(a, dev);
  std::printf("{\"runner\": \"%s\", \"model\": \"%s\", \"optimizer\": \"%s\", \"impl\": \"%s\", \"ms_per_step\": %.5f, \"steps\": %lld}\n",
              a.runner.c_str(), a.model.c_str(), a.optimizer.c_str(), a.impl.c_str(), ms,
              static_cast<long long>(a.batches));
}
