// The CUDA test set (a build with -Dcuda=true, run by scripts/gpu-check.sh on a machine with a
// GPU): device placement and pinned, non-blocking batches; autocast in float16 and bfloat16;
// GradScaler's skip and back-off on a real float16 overflow; a checkpoint written on the GPU
// resuming bit for bit (the CUDA generator included); the NCCL backend and the gradient
// all-reduce on CUDA tensors; Kineto traces with the GPU's kernels; the foreach and fused
// optimizer steps (and the default, foreach on CUDA) equal to this machine's torch.optim bit for bit.
#include "../core/test_trials.hpp"
#include "../optim/optim_cases.hpp"

// process_group() and allreduce_sum_async_ hand out c10d types, which dtl's headers only name.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <fstream>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

// A classifier with dropout (CUDA random numbers) on shuffled data, SGD with momentum, and an
// evaluation that draws from the device's generator; optionally float16 autocast with a scaler.
class GpuTrial : public dtl::PyTorchTrial<GpuTrial> {
 public:
  explicit GpuTrial(dtl::PyTorchTrialContext& ctx, bool amp = false) : ctx_(ctx), amp_(amp) {
    torch::manual_seed(11);
    model_ = ctx.wrap_model(torch::nn::Sequential(torch::nn::Linear(20, 64), torch::nn::ReLU(),
                                                  torch::nn::Dropout(0.2), torch::nn::Linear(64, 4)));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    if (amp_) scaler_ = ctx.wrap_scaler(dtl::GradScaler({.init_scale = 1024.0}));
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(3);
    x_ = torch::randn({256, 20}, g);
    y_ = x_.narrow(1, 0, 4).argmax(1);
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 16, .shuffle = true, .pin_memory = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 64}); }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto& [x, y] = b;
    batches_on_cuda_ += x.is_cuda() && y.is_cuda();
    torch::Tensor loss;
    if (amp_) {
      {
        dtl::autocast region(torch::kCUDA, torch::kHalf);
        loss = torch::cross_entropy_loss(model_->forward(x), y);
      }
      ctx_.backward(scaler_->scale(loss));
      ctx_.step_optimizer(opt_, scaler_);
      scaler_->update();  // the trial's, as in Determined
    } else {
      loss = torch::cross_entropy_loss(model_->forward(x), y);
      ctx_.backward(loss);
      ctx_.step_optimizer(opt_);
    }
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    const auto noise = torch::rand({1}, torch::TensorOptions().device(ctx_.device()));  // the CUDA generator
    return {{"validation_loss", torch::cross_entropy_loss(model_->forward(std::get<0>(b)), std::get<1>(b))},
            {"noise", noise.squeeze()}};
  }
  std::int64_t batches_on_cuda_ = 0;

 private:
  dtl::PyTorchTrialContext& ctx_;
  bool amp_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<dtl::GradScaler> scaler_;
  torch::Tensor x_, y_;
};

dtl::InitOptions options(const std::filesystem::path& dir, std::uint64_t seed = 1) {
  auto o = test::init_options("cuda", 16, 0.05);
  o.run_dir = dir;
  o.seed = seed;
  o.device = torch::Device(torch::kCUDA, 0);
  return o;
}

std::vector<torch::Tensor> weights(dtl::PyTorchTrialContext& ctx) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ctx.models()[0]->parameters()) out.push_back(p.detach().cpu().clone());
  return out;
}

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("cuda: dtl::init picks cuda:0; the model and every batch are on it; pinned batches") {
  auto ctx = dtl::init(options(test::temp_run_dir("cuda-place")));
  CHECK(ctx.device().is_cuda());
  GpuTrial trial(ctx);
  for (const auto& p : ctx.models()[0]->parameters()) CHECK(p.is_cuda());
  auto loader = trial.build_training_data_loader();
  auto stream = loader.stream();
  CHECK(std::get<0>(*stream.begin()).is_pinned());  // pin_memory: page-locked host batches, copied without blocking
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{20}, .quiet = true});
  CHECK(trial.batches_on_cuda_ == 20);
  for (const auto& p : ctx.models()[0]->parameters()) CHECK(p.is_cuda());
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("cuda: a checkpoint written on the GPU resumes bit for bit, the CUDA generator included") {
  const auto base = test::temp_run_dir("cuda-resume");
  const dtl::FitOptions fit{.max_length = dtl::Batch{40},
                            .validation_period = dtl::Batch{10},
                            .checkpoint_period = dtl::Batch{20},
                            .reporting_period = dtl::Batch{5},
                            .quiet = true};
  std::vector<torch::Tensor> straight, resumed;
  {
    auto ctx = dtl::init(options(base / "straight"));
    GpuTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit(fit);
    straight = weights(ctx);
  }
  {
    auto ctx = dtl::init(options(base / "resumed"));
    GpuTrial trial(ctx);
    auto first = fit;
    first.max_length = dtl::Batch{20};
    dtl::Trainer(trial, ctx).fit(first);
  }
  const auto checkpoint = test::latest_checkpoint(base / "resumed");
  {
    nlohmann::json state;
    std::ifstream(checkpoint / "trial_state.json") >> state;
    REQUIRE(state.contains("ranks"));
    CHECK(state["ranks"][0].contains("cuda_rng_state"));  // saved per device
  }
  {
    auto ctx = dtl::init(options(base / "resumed", /*seed=*/99));  // another seed changes nothing
    GpuTrial trial(ctx);
    auto second = fit;
    second.latest_checkpoint = checkpoint;
    dtl::Trainer(trial, ctx).fit(second);
    resumed = weights(ctx);
  }
  CHECK(same(resumed, straight));
  CHECK(test::records(base / "resumed", "training") == test::records(base / "straight", "training"));
  // Validation draws from the CUDA generator: equal only if its state was restored.
  CHECK(test::records(base / "resumed", "validation") == test::records(base / "straight", "validation"));
  std::filesystem::remove_all(base);
}

TEST_CASE("cuda: autocast runs matmuls in float16 or bfloat16 and restores float32 outside") {
  torch::manual_seed(1);
  torch::nn::Linear lin(8, 8);
  lin->to(torch::kCUDA);
  auto x = torch::randn({4, 8}, torch::kCUDA);
  {
    dtl::autocast region(torch::kCUDA, torch::kHalf);
    CHECK((lin(x).scalar_type() == torch::kHalf));
    CHECK((torch::mse_loss(lin(x), x).scalar_type() == torch::kFloat));  // losses stay float32
  }
  {
    dtl::autocast region(torch::kCUDA, torch::kBFloat16);
    CHECK((lin(x).scalar_type() == torch::kBFloat16));
  }
  CHECK((lin(x).scalar_type() == torch::kFloat));
  CHECK_FALSE(dtl::detail::compat::autocast_enabled(torch::kCUDA));
}

TEST_CASE("cuda: GradScaler on a real float16 overflow skips the step, backs off, then steps (ATen's CUDA kernels)") {
  torch::manual_seed(2);
  torch::nn::Linear lin(16, 16);
  lin->to(torch::kCUDA);
  auto opt = std::make_shared<torch::optim::SGD>(lin->parameters(), 0.01);
  // 2^20 on a loss of order 1: float16 gradients of the autocast region overflow (max 65504).
  dtl::GradScaler scaler({.init_scale = 1048576.0 * 64, .growth_interval = 1000});
  auto x = torch::randn({64, 16}, torch::kCUDA) * 100;
  auto step = [&] {
    opt->zero_grad();
    torch::Tensor loss;
    {
      dtl::autocast region(torch::kCUDA, torch::kHalf);
      loss = lin(x).to(torch::kFloat).pow(2).mean();
    }
    scaler.scale(loss).backward();
    const bool stepped = scaler.step(*opt);
    scaler.update();
    return stepped;
  };
  const auto w = lin->weight.detach().clone();
  CHECK_FALSE(step());
  CHECK(torch::equal(lin->weight.detach(), w));  // the overflowing step left the weights alone
  CHECK(scaler.get_scale() == 1048576.0 * 32);
  int skipped = 1;
  while (!step()) ++skipped;
  CHECK(skipped == scaler.steps_skipped());
  CHECK(scaler.get_scale() < 1048576.0 * 32);
  CHECK_FALSE(torch::equal(lin->weight.detach(), w));
  CHECK(torch::isfinite(lin->weight).all().item<bool>());
}

TEST_CASE("cuda: the trial with float16 autocast and a scaler trains and resumes bit for bit") {
  const auto base = test::temp_run_dir("cuda-amp");
  const dtl::FitOptions fit{.max_length = dtl::Batch{30}, .checkpoint_period = dtl::Batch{15}, .quiet = true};
  std::vector<torch::Tensor> straight, resumed;
  {
    auto ctx = dtl::init(options(base / "straight"));
    GpuTrial trial(ctx, /*amp=*/true);
    dtl::Trainer(trial, ctx).fit(fit);
    straight = weights(ctx);
  }
  {
    auto ctx = dtl::init(options(base / "resumed"));
    GpuTrial trial(ctx, true);
    auto first = fit;
    first.max_length = dtl::Batch{15};
    dtl::Trainer(trial, ctx).fit(first);
  }
  {
    auto ctx = dtl::init(options(base / "resumed"));
    GpuTrial trial(ctx, true);
    auto second = fit;
    second.latest_checkpoint = test::latest_checkpoint(base / "resumed");
    dtl::Trainer(trial, ctx).fit(second);
    resumed = weights(ctx);
  }
  CHECK(same(resumed, straight));
  for (const auto& w : straight) CHECK(torch::isfinite(w).all().item<bool>());
  std::filesystem::remove_all(base);
}

TEST_CASE("cuda: the NCCL backend on one rank: CUDA tensors on NCCL, objects on Gloo, process_group()") {
  dtl::DistributedOptions o{.master_port = 29641, .backend = dtl::DistributedBackend::nccl, .connect_single_process = true};
  dtl::DistributedContext dist(o);
  REQUIRE(dist.connected());
  auto t = torch::arange(6, torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA));
  dist.allreduce_sum_(t);  // one rank: the sum is itself
  CHECK(torch::equal(t.cpu(), torch::arange(6, torch::kFloat)));
  auto w = dist.allreduce_sum_async_(t);
  dist.wait(w, "test");
  dist.broadcast_(t);
  CHECK(torch::equal(t.cpu(), torch::arange(6, torch::kFloat)));
  CHECK(dist.allgather(nlohmann::json{{"rank", 0}}).size() == 1);
  dist.barrier();
  auto pg = dist.process_group();
  REQUIRE(pg);
  std::vector<torch::Tensor> v{t};
  pg->allreduce(v)->wait();
  CHECK(torch::equal(t.cpu(), torch::arange(6, torch::kFloat)));
}

TEST_CASE("cuda: data-parallel gradient sync over NCCL on one rank leaves the gradients as backward made them") {
  dtl::DistributedOptions o{.master_port = 29642, .backend = dtl::DistributedBackend::nccl, .connect_single_process = true};
  dtl::DistributedContext dist(o);
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(32, 64), torch::nn::ReLU(), torch::nn::Linear(64, 2));
  net->to(torch::kCUDA);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : net->named_parameters()) named.emplace_back(p.key(), p.value());
  auto x = torch::randn({8, 32}, torch::kCUDA);
  net->forward(x).pow(2).sum().backward();
  std::vector<torch::Tensor> plain;
  for (const auto& p : net->parameters()) plain.push_back(p.grad().clone()), p.mutable_grad().zero_();
  {
    dtl::detail::GradientSynchronizer sync(dist, named, {.bucket_cap_mb = 0.001});  // several buckets
    net->forward(x).pow(2).sum().backward();
  }
  std::size_t i = 0;
  for (const auto& p : net->parameters()) CHECK(torch::equal(p.grad(), plain[i++]));
}

TEST_CASE("cuda: set_profiler's Kineto traces hold the GPU's kernels beside train_batch") {
  const auto dir = std::filesystem::temp_directory_path() / "dtl-cuda-profiler";
  std::filesystem::remove_all(dir);
  auto ctx = dtl::init(options(dir));
  GpuTrial trial(ctx);
  ctx.set_profiler({.wait = 1, .warmup = 1, .active = 2, .repeat = 1});
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{8}, .quiet = true});
  const auto traces = ctx.profiler_traces();
  REQUIRE(traces.size() == 1);
  nlohmann::json trace;
  std::ifstream(traces[0]) >> trace;
  REQUIRE(trace.is_object());
  // Each train_batch range appears twice: on the CPU (user_annotation) and, with CUDA activity,
  // again on the GPU's timeline (gpu_user_annotation).
  int train_batches = 0, gpu_ranges = 0, kernels = 0, runtime = 0;
  for (const auto& e : trace["traceEvents"]) {
    const auto cat = e.value("cat", std::string());
    if (e.value("name", std::string()) == "train_batch") (cat.starts_with("gpu_") ? gpu_ranges : train_batches) += 1;
    kernels += cat == "kernel";
    runtime += cat == "cuda_runtime" || cat == "cuda_driver";
  }
  MESSAGE("trace: " << kernels << " kernel events, " << runtime << " CUDA runtime/driver events, " << gpu_ranges
                    << " train_batch ranges on the GPU");
  CHECK(train_batches == 2);
  CHECK(kernels > 0);
  CHECK(runtime > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("on CUDA, foreach (the default) and fused SGD, Adam and AdamW give torch.optim's numbers bit for bit") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  auto all = optim_test::specs("cuda");
  for (const char* opt : {"SGD", "Adam"}) {  // the default choice, which is foreach on CUDA
    optim_test::Spec s{.name = "default", .optimizer = opt, .impl = "default", .kwargs = {{"lr", 0.01}}};
    if (std::string(opt) == "SGD") s.kwargs["momentum"] = 0.9;
    s.device = "cuda";
    all.push_back(s);
  }
  const auto py = optim_test::python_results(all);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& s = all[i];
    CAPTURE(s.name);
    CAPTURE(s.optimizer);
    CAPTURE(s.impl);
    auto r = optim_test::run_dtl(s, s.steps);
    for (std::size_t p = 0; p < r.params.size(); ++p) {
      CAPTURE(p);
      CHECK(optim_test::hexes(r.params[p]) == py[i]["params"][p].get<std::vector<std::string>>());
    }
    CHECK(optim_test::dtl_state(*r.opt, r.params) == py[i]["state"]);
    if (s.scaler) CHECK(r.scaler->get_scale() == py[i]["scale"].get<double>());
  }
}

TEST_CASE("metrics on CUDA reach the host in one copy per workload and average as Determined's np.mean") {
  // Float32 losses on the GPU, 5 metrics a batch: to_host brings every 0-d value over at once;
  // the mean is numpy's float32 mean of the values (Determined copies each batch's value to numpy).
  dtl::detail::MetricCollector c;
  torch::manual_seed(5);
  auto values = torch::rand({37}) * 3;  // float32
  for (std::int64_t b = 0; b < values.size(0); ++b) {
    auto v = values[b].to(torch::kCUDA);
    c.add(dtl::Metrics{{"loss", v}, {"a", v * 2}, {"b", v.to(torch::kDouble)}, {"c", 1.5}, {"d", v + 1}}, "training");
  }
  c.to_host();
  for (std::size_t i = 0; i < c.keys().size(); ++i)
    for (const auto& e : c.column(i)) CHECK_FALSE(e.tensor.defined());
  auto rep = dtl::detail::reduce_training(c);
  std::vector<float> f(values.data_ptr<float>(), values.data_ptr<float>() + values.size(0));
  const auto want = static_cast<double>(dtl::detail::numpy_mean(std::span<const float>(f), dtl::detail::compat::numpy_sum_buffer));
  CHECK(rep.avg_metrics["loss"].get<double>() == want);
  CHECK(std::find(rep.float32_keys.begin(), rep.float32_keys.end(), "loss") != rep.float32_keys.end());
  CHECK(std::find(rep.float32_keys.begin(), rep.float32_keys.end(), "b") == rep.float32_keys.end());  // float64
  REQUIRE(rep.batch_metrics.size() == 37);
  CHECK(rep.batch_metrics[4]["loss"].get<double>() == static_cast<double>(values[4].item<float>()));
  CHECK(rep.batch_metrics[4]["c"].get<double>() == 1.5);
}

namespace {

// FitOptions::cuda_graphs' trial: dropout (the CUDA generator inside the graph), Adam with weight
// decay under a StepLR that halves the learning rate every 4 batches (the device lr tensor), an
// optional float16 autocast with a GradScaler (its inf check and update inside the graph), and
// metrics of three kinds: float32, float64 and an int64 count. 200 examples in batches of 16: a
// partial batch of 8 ends each epoch of 13.
class GraphTrial : public dtl::PyTorchTrial<GraphTrial> {
 public:
  GraphTrial(dtl::PyTorchTrialContext& ctx, bool amp, dtl::OptimizerOptions oo, bool host_sync = false)
      : ctx_(ctx), amp_(amp), host_sync_(host_sync) {
    torch::manual_seed(21);
    model_ = ctx.wrap_model(torch::nn::Sequential(torch::nn::Linear(20, 64), torch::nn::ReLU(),
                                                  torch::nn::Dropout(0.2), torch::nn::Linear(64, 4)));
    opt_ = ctx.wrap_optimizer(
        torch::optim::Adam(model_->parameters(), torch::optim::AdamOptions(0.01).weight_decay(0.01)), oo);
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt_, 4, 0.5), dtl::StepMode::STEP_EVERY_BATCH);
    if (amp_) scaler_ = ctx.wrap_scaler(dtl::GradScaler({.init_scale = 1024.0, .growth_interval = 3}));
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(4);
    x_ = torch::randn({200, 20}, g);
    y_ = x_.narrow(1, 0, 4).argmax(1);
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 16, .shuffle = true, .pin_memory = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 50}); }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    ++calls_;
    auto& [x, y] = b;
    torch::Tensor logits, loss;
    {
      std::optional<dtl::autocast> region;
      if (amp_) region.emplace(torch::kCUDA, torch::kHalf);
      logits = model_->forward(x);
      loss = torch::cross_entropy_loss(logits, y);
    }
    if (host_sync_ && loss.item<float>() < 0) loss = loss * 2;  // waits for the GPU
    if (amp_) {
      ctx_.backward(scaler_->scale(loss));
      ctx_.step_optimizer(opt_, scaler_);
      scaler_->update();
    } else {
      ctx_.backward(loss);
      ctx_.step_optimizer(opt_);
    }
    auto correct = (logits.argmax(1) == y).sum();
    return {{"loss", loss}, {"loss64", loss.detach().to(torch::kDouble)}, {"correct", correct}};
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    return {{"validation_loss", torch::cross_entropy_loss(model_->forward(std::get<0>(b)), std::get<1>(b))}};
  }
  std::int64_t calls_ = 0;
  std::shared_ptr<dtl::GradScaler> scaler_;
  std::shared_ptr<torch::optim::Adam> opt_;

 private:
  dtl::PyTorchTrialContext& ctx_;
  bool amp_, host_sync_;
  torch::nn::Sequential model_{nullptr};
  torch::Tensor x_, y_;
};

struct GraphRun {
  std::vector<torch::Tensor> weights;
  nlohmann::json optimizer_state;
  std::vector<nlohmann::json> training, validation;
  std::int64_t calls = 0;
  double scale = 0;
  std::int64_t steps_taken = 0;
};

GraphRun graph_run(const std::filesystem::path& dir, bool amp, bool graphs, std::int64_t batches,
                   std::optional<std::filesystem::path> resume = std::nullopt) {
  auto ctx = dtl::init(options(dir));
  GraphTrial trial(ctx, amp, graphs ? dtl::OptimizerOptions{} : dtl::OptimizerOptions{.capturable = true});
  dtl::FitOptions fit{.max_length = dtl::Batch{batches},
                      .validation_period = dtl::Batch{10},
                      .reporting_period = dtl::Batch{5},
                      .quiet = true,
                      .cuda_graphs = graphs};
  fit.latest_checkpoint = resume;
  dtl::Trainer(trial, ctx).fit(fit);
  GraphRun r;
  r.weights = weights(ctx);
  std::vector<torch::Tensor> params;
  for (const auto& p : ctx.models()[0]->parameters()) params.push_back(p);
  r.optimizer_state = optim_test::dtl_state(*trial.opt_, params);
  r.training = test::records(ctx.run_dir(), "training");
  r.validation = test::records(ctx.run_dir(), "validation");
  r.calls = trial.calls_;
  if (amp) {
    r.scale = trial.scaler_->get_scale();
    r.steps_taken = trial.scaler_->steps_taken();
  }
  return r;
}

}  // namespace

TEST_CASE("cuda: cuda_graphs replays give the eager capturable step's numbers bit for bit, and resume exactly") {
  for (bool amp : {false, true}) {
    CAPTURE(amp);
    const auto base = test::temp_run_dir(amp ? "cuda-graphs-amp" : "cuda-graphs");
    const auto eager = graph_run(base / "eager", amp, false, 30);
    const auto graphs = graph_run(base / "graphs", amp, true, 30);
    CHECK(eager.calls == 30);
    // Three warm-up batches, the captured one, and the partial batches 12 and 25 (eager): the
    // other 24 batches were replays, which do not run train_batch's host code.
    CHECK(graphs.calls == 6);
    CHECK(same(eager.weights, graphs.weights));
    CHECK(eager.optimizer_state == graphs.optimizer_state);
    CHECK(eager.training == graphs.training);  // per-batch metrics, averages, the three dtypes
    CHECK(eager.validation == graphs.validation);
    CHECK(eager.scale == graphs.scale);
    CHECK(eager.steps_taken == graphs.steps_taken);
    // A checkpoint written between replays resumes (with a new capture) to the same numbers.
    graph_run(base / "resumed", amp, true, 20);
    const auto resumed =
        graph_run(base / "resumed", amp, true, 30, test::latest_checkpoint(base / "resumed"));
    CHECK(same(resumed.weights, graphs.weights));
    CHECK(resumed.optimizer_state == graphs.optimizer_state);
    std::filesystem::remove_all(base);
  }
}

// Last in the file: the failed capture it provokes must leave the device usable.
TEST_CASE("cuda: cuda_graphs stops with one line, before the batch changes anything, when train_batch waits for the GPU") {
  auto ctx = dtl::init(options(test::temp_run_dir("cuda-graphs-sync")));
  GraphTrial trial(ctx, false, {}, /*host_sync=*/true);
  const auto before = weights(ctx);
  std::string what;
  try {
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{10}, .quiet = true, .cuda_graphs = true});
  } catch (const dtl::InvalidExperimentException& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("train_batch could not be captured into a CUDA graph at batch 3") != std::string::npos);
  CHECK(what.find(".item()") != std::string::npos);
  CHECK(what.find('\n') == std::string::npos);
  CHECK(trial.calls_ == 4);
  CHECK_FALSE(same(before, weights(ctx)));  // the three warm-up batches trained
  CHECK(torch::ones({3}, torch::kCUDA).sum().item<float>() == 3.0f);  // the device still works
  std::filesystem::remove_all(ctx.run_dir());
}
