// The yardstick for a trial's -O2 rebuild (tools/bench_table.py, the compile-time rows): OneVar's
// bodies (examples/onevar_split/onevar_trial.cpp) written against LibTorch alone, as a hand-written
// loop would hold them: the same model, optimizer, loss, backward and step, the same two values
// returned per batch, no dtl. Compiled with -c from a precompiled <torch/torch.h>, it measures what
// any translation unit that calls LibTorch pays at -O2 before dtl adds anything.
#include <torch/torch.h>

#include <memory>
#include <tuple>

class OneVarByHand {
 public:
  explicit OneVarByHand(double learning_rate);
  std::tuple<torch::Tensor, torch::Tensor> train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch);
  torch::Tensor evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch);
  [[nodiscard]] double weight() const;

 private:
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

OneVarByHand::OneVarByHand(double learning_rate) {
  model_ = torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false));
  {
    torch::NoGradGuard no_grad;
    model_->weight.zero_();
  }
  opt_ = std::make_shared<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(learning_rate));
}

std::tuple<torch::Tensor, torch::Tensor> OneVarByHand::train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch) {
  auto& [x, y] = batch;
  auto loss = torch::mse_loss(model_(x), y);
  loss.backward();
  opt_->step();
  opt_->zero_grad();
  return {loss, model_->weight.detach().flatten()[0]};
}

torch::Tensor OneVarByHand::evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch) {
  auto& [x, y] = batch;
  return torch::mse_loss(model_(x), y);
}

double OneVarByHand::weight() const { return model_->weight.item<double>(); }
