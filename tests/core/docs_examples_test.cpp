// The trial from docs/getting-started.md, verbatim, so the docs cannot drift from the API.
#include "test_trials.hpp"

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
