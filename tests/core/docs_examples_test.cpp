// The trial from docs/getting-started.md, verbatim, so the docs cannot drift from the API.
#include "test_trials.hpp"

#include <algorithm>
#include <fstream>

namespace docs {
using Batch = std::tuple<torch::Tensor, torch::Tensor>;

class MyTrial : public dtl::PyTorchTrial<MyTrial> {
 public:
  explicit MyTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(10, 2));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), ctx.get_hparam<double>("lr")));
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(data_, {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(data_, {.batch_size = ctx_.get_per_slot_batch_size()}); }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto loss = torch::cross_entropy_loss(model_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_, dtl::clip_grad_norm(1.0));
    return {{"loss", loss}};  // or just `return loss;`
  }
  dtl::Metrics evaluate_batch(Batch& batch) {
    auto& [x, y] = batch;
    return {{"validation_loss", torch::cross_entropy_loss(model_(x), y)}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  dtl::TensorDataset<2> data_{torch::randn({256, 10}), torch::randint(2, {256})};
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};
}  // namespace docs

TEST_CASE("the getting-started trial builds and trains 5 epochs of 8 batches") {
  auto ctx = dtl::init(
      {.hparams = {{"lr", 0.1}, {"global_batch_size", 32}}, .seed = 5, .run_dir = test::temp_run_dir("docs")});
  docs::MyTrial trial(ctx);

  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Epoch{5}, .validation_period = dtl::Epoch{1}});
  CHECK(trainer.state().epochs_trained == 5);
  CHECK(trainer.state().batches_trained == 40);
  std::filesystem::remove_all(ctx.run_dir());
}

// The seeds' ImageNet-style train_batch (pytorch/examples' imagenet/main.py, ported to
// Determined), as docs/porting.md shows it side by side with the Python.
namespace docs_imagenet {
using Batch = std::tuple<torch::Tensor, torch::Tensor>;

/// Top-k accuracy in percent, as imagenet/main.py's accuracy(output, target, topk=(1, 5)).
std::vector<torch::Tensor> accuracy(const torch::Tensor& output, const torch::Tensor& target, std::vector<std::int64_t> topk) {
  torch::NoGradGuard no_grad;
  const auto maxk = *std::max_element(topk.begin(), topk.end());
  const auto pred = std::get<1>(output.topk(maxk, 1, true, true)).t();
  const auto correct = pred.eq(target.view({1, -1}).expand_as(pred));
  std::vector<torch::Tensor> res;
  for (auto k : topk)
    res.push_back(correct.slice(0, 0, k).reshape(-1).to(torch::kFloat).sum(0, true).mul_(100.0 / static_cast<double>(target.size(0))));
  return res;
}

class ImageNetTrial : public dtl::PyTorchTrial<ImageNetTrial> {
 public:
  explicit ImageNetTrial(dtl::PyTorchTrialContext& ctx) : context_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(32, 10));
    optimizer_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)));
  }
  auto build_training_data_loader() { return dtl::DataLoader(data_, {.batch_size = 16, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data_, {.batch_size = 16}); }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [images, target] = batch;
    auto output = model_(images);
    auto loss = criterion_(output, target);
    auto acc = accuracy(output, target, {1, 5});

    context_.backward(loss);
    context_.step_optimizer(optimizer_);

    return {{"loss", loss.item<double>()}, {"top1", acc[0][0]}, {"top5", acc[1][0]}};
  }
  dtl::Metrics evaluate_batch(Batch& batch) {
    auto& [images, target] = batch;
    return {{"validation_loss", criterion_(model_(images), target)}};
  }

 private:
  dtl::PyTorchTrialContext& context_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> optimizer_;
  torch::nn::CrossEntropyLoss criterion_;
  dtl::TensorDataset<2> data_{torch::randn({128, 32}), torch::randint(10, {128})};
};
}  // namespace docs_imagenet

TEST_CASE("the seeds' ImageNet-style train_batch, ported (docs/porting.md), trains and reports top1/top5") {
  auto ctx = dtl::init({.seed = 5, .run_dir = test::temp_run_dir("docs_imagenet")});
  docs_imagenet::ImageNetTrial trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{16}, .reporting_period = dtl::Batch{8}, .quiet = true});
  CHECK(trainer.state().batches_trained == 16);
  std::ifstream in(ctx.run_dir() / "metrics.jsonl");
  std::string line;
  std::getline(in, line);
  const auto first = nlohmann::json::parse(line);
  CHECK(first["metrics"].contains("top1"));
  CHECK(first["metrics"]["top5"].get<double>() >= first["metrics"]["top1"].get<double>());
  std::filesystem::remove_all(ctx.run_dir());
}
