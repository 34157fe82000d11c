// The trainee of the crash test (tests/core/crash_test.cpp): a run with everything a resume must
// restore — shuffled data loaded by worker threads, SGD with momentum, a per-batch StepLR — that
// checkpoints every 3 batches. The test kills it with SIGKILL at random moments, resumes it with
// `--resume latest`, and compares its final weights with an uninterrupted run's.
//   resume_child --run-dir DIR --max-length batches=60 [--resume latest]
// On success it writes the weights' exact bits to DIR/final_weights.txt.
#include <dtl/trainer.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

class CrashTrial : public dtl::PyTorchTrial<CrashTrial> {
 public:
  explicit CrashTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::manual_seed(3);
    model_ = ctx.wrap_model(torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 1)));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt_, 7, 0.9), dtl::StepMode::STEP_EVERY_BATCH);
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(11);
    x_ = torch::randn({200, 4}, g);
    y_ = x_.sum(1, true).sin();
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8, .shuffle = true, .num_workers = 2});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 50}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    // A few ms per batch, so that random kills land in every phase rather than after the end.
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    // Dropout-like randomness from the global generator, so the RNG state must be restored too.
    auto noise = 0.01 * torch::randn_like(std::get<0>(b));
    auto loss = torch::mse_loss(model_->forward(std::get<0>(b) + noise), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    return {{"validation_loss", torch::mse_loss(model_->forward(std::get<0>(b)), std::get<1>(b))}};
  }
  torch::nn::Sequential& model() { return model_; }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  auto ctx = dtl::init(argc, argv, {.hparams = {{"global_batch_size", 8}}, .seed = 5});
  CrashTrial trial(ctx);
  dtl::Trainer(trial, ctx)
      .fit({.validation_period = dtl::Batch{10}, .checkpoint_period = dtl::Batch{3}, .quiet = true});
  std::ofstream out(ctx.run_dir() / "final_weights.txt");
  for (const auto& p : trial.model()->parameters()) {
    const auto c = p.detach().contiguous();
    const auto* f = c.data_ptr<float>();
    for (std::int64_t i = 0; i < c.numel(); ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, f + i, sizeof bits);
      out << std::hex << bits << '\n';
    }
  }
  return out ? 0 : 1;
}
