// OneVar's bodies (onevar_trial.hpp says why they are here): what a user edits between runs.
#include "onevar_trial.hpp"

OneVarTrial::OneVarTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
  model_ = ctx.wrap_model(torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
  {
    torch::NoGradGuard no_grad;
    model_->weight.zero_();
  }
  opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), ctx.get_hparam<double>("learning_rate")));
}

dtl::Metrics OneVarTrial::train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t /*epoch_idx*/,
                                      std::int64_t /*batch_idx*/) {
  auto& [x, y] = batch;
  auto loss = torch::mse_loss(model_(x), y);
  ctx_.backward(loss);
  ctx_.step_optimizer(opt_);
  return {{"loss", loss}, {"weight", model_->weight.detach().flatten()[0]}};
}

dtl::Metrics OneVarTrial::evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch) {
  auto& [x, y] = batch;
  return {{"validation_loss", torch::mse_loss(model_(x), y)}};
}

double OneVarTrial::weight() const { return model_->weight.item<double>(); }
