// OneVar: Determined's analytic test trial. One weight w (Linear(1, 1) without bias, w0 = 0),
// data = label = 1, SGD lr 0.001, MSE loss. After n steps w = 1 - 0.998^n exactly, and the
// training loss of batch i is 0.998^(2i); the test suite checks these against the formula.
//   ./onevar --max-length batches=100
#include <dtl/trainer.hpp>

#include <iostream>

class OneVarTrial : public dtl::PyTorchTrial<OneVarTrial> {
 public:
  explicit OneVarTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
    {
      torch::NoGradGuard no_grad;
      model_->weight.zero_();
    }
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), ctx.get_hparam<double>("learning_rate")));
  }

  auto build_training_data_loader() { return dtl::DataLoader(ones(64), {.batch_size = batch_size()}); }
  auto build_validation_data_loader() { return dtl::DataLoader(ones(16), {.batch_size = batch_size()}); }

  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t /*epoch_idx*/,
                           std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto loss = torch::mse_loss(model_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}, {"weight", model_->weight.detach().flatten()[0]}};
  }

  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch) {
    auto& [x, y] = batch;
    return {{"validation_loss", torch::mse_loss(model_(x), y)}};
  }

  [[nodiscard]] double weight() const { return model_->weight.item<double>(); }

 private:
  [[nodiscard]] std::int64_t batch_size() const { return ctx_.get_per_slot_batch_size(); }
  static dtl::TensorDataset<2> ones(std::int64_t n) {
    return dtl::TensorDataset(torch::ones({n, 1}), torch::ones({n, 1}));
  }

  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

#ifndef DTL_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  auto ctx = dtl::init(argc, argv, {.hparams = {{"learning_rate", 0.001}, {"global_batch_size", 4}}, .seed = 0});
  OneVarTrial trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{100}, .validation_period = dtl::Batch{50},
               .checkpoint_policy = dtl::CheckpointPolicy::none});
  std::cout << "w = " << trial.weight() << "  (1 - 0.998^n predicts " << 1.0 - std::pow(0.998, trainer.state().batches_trained)
            << ")\n";
}
#endif
