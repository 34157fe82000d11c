// A small trial from outside the project: what each consumer (pkg-config, CMake, meson
// subproject) builds and runs to prove its way of finding dtl works. y = 2x + 1, learned.
#include <dtl/trainer.hpp>

#include <iostream>

class LineTrial : public dtl::PyTorchTrial<LineTrial> {
 public:
  explicit LineTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), ctx.get_hparam<double>("lr")));
    x_ = torch::linspace(-1, 1, 64).unsqueeze(1);
    y_ = 2 * x_ + 1;
  }
  auto build_training_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 32}); }
  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& b, std::int64_t, std::int64_t) {
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& b) {
    return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}};
  }
  [[nodiscard]] double weight() const { return model_->weight.item<double>(); }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

int main(int argc, char** argv) {
  auto ctx = dtl::init(argc, argv, {.hparams = {{"lr", 0.2}, {"global_batch_size", 8}}, .seed = 3});
  LineTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{200}, .validation_period = dtl::Batch{100}, .quiet = true});
  std::cout << "consumer: w = " << trial.weight() << "\n";
  return std::abs(trial.weight() - 2.0) < 0.05 ? 0 : 1;
}
