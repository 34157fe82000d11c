// dtl example: a GAN — the seeds' two-models, two-optimizers pattern. A generator learns to
// sample N(3, 0.5) from noise against a discriminator; each model has its own optimizer and its
// own loss, both under configure_apex_amp(num_losses = 2) (native autocast + a loss scaler per
// loss; `--hparam amp_level=O0` trains in float32); the generator's optimizer decays by
// 0.95^epoch (LambdaLR, as in the seeds) and the discriminator's warms up then follows a cosine.
//   build/examples/gan --run-dir runs/gan
#include <dtl/trainer.hpp>

#include <cmath>

class GanTrial : public dtl::PyTorchTrial<GanTrial> {
 public:
  explicit GanTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::nn::Sequential g, d;
    g->push_back(torch::nn::Linear(4, 32));
    g->push_back(torch::nn::ReLU());
    g->push_back(torch::nn::Linear(32, 1));
    d->push_back(torch::nn::Linear(1, 32));
    d->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)));
    d->push_back(torch::nn::Linear(32, 1));
    generator_ = ctx.wrap_model(g);
    discriminator_ = ctx.wrap_model(d);
    const double lr = ctx.get_hparam<double>("lr");
    opt_g_ = ctx.wrap_optimizer(torch::optim::Adam(generator_->parameters(), torch::optim::AdamOptions(lr).betas({0.5, 0.999})));
    opt_d_ = ctx.wrap_optimizer(torch::optim::Adam(discriminator_->parameters(), torch::optim::AdamOptions(lr).betas({0.5, 0.999})));
    // (self.a, self.b), (self.opt1, self.opt2) = context.configure_apex_amp(models=[a, b], optimizers=[opt1, opt2], num_losses=2)
    ctx.configure_apex_amp({generator_, discriminator_}, {opt_g_, opt_d_},
                           {.opt_level = ctx.get_hparam<std::string>("amp_level"), .num_losses = 2});
    // context.wrap_lr_scheduler(LambdaLR(opt1, lr_lambda=lambda epoch: 0.95 ** epoch), STEP_EVERY_EPOCH)
    ctx.wrap_lr_scheduler(dtl::lr::LambdaLR(opt_g_, [](std::int64_t epoch) { return std::pow(0.95, epoch); }),
                          dtl::StepMode::STEP_EVERY_EPOCH);
    auto warmup = std::make_shared<dtl::lr::LinearLR>(opt_d_, 0.1, 1.0, 20);
    auto cosine = std::make_shared<dtl::lr::CosineAnnealingLR>(opt_d_, 300, lr / 10);
    ctx.wrap_lr_scheduler(dtl::lr::SequentialLR(opt_d_, {warmup, cosine}, {20}), dtl::StepMode::STEP_EVERY_BATCH);
    auto gen = torch::make_generator<torch::CPUGeneratorImpl>(5);
    real_ = 3.0 + 0.5 * torch::randn({4096, 1}, gen);
    noise_ = torch::randn({1024, 4}, gen);  // fixed validation noise
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(real_), {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(noise_), {.batch_size = 256}); }

  dtl::Metrics train_batch(std::tuple<torch::Tensor>& batch, std::int64_t, std::int64_t) {
    const auto& real = std::get<0>(batch);
    const auto n = real.size(0);
    auto fake = generator_->forward(torch::randn({n, 4}));
    // Discriminator: real → 1, fake → 0 (the generator's output detached). Its gradients start
    // clean: the generator's backward below also reaches the discriminator's parameters.
    opt_d_->zero_grad();
    auto d_loss = torch::binary_cross_entropy_with_logits(discriminator_->forward(real), torch::ones({n, 1})) +
                  torch::binary_cross_entropy_with_logits(discriminator_->forward(fake.detach()), torch::zeros({n, 1}));
    ctx_.backward(d_loss, 0);  // loss 0's scaler
    ctx_.step_optimizer(opt_d_);
    // Generator: make the discriminator say 1.
    auto g_loss = torch::binary_cross_entropy_with_logits(discriminator_->forward(fake), torch::ones({n, 1}));
    ctx_.backward(g_loss, 1);  // loss 1's scaler
    ctx_.step_optimizer(opt_g_);
    return {{"d_loss", d_loss}, {"g_loss", g_loss}};
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor>& batch) {
    const auto samples = generator_->forward(std::get<0>(batch)).to(torch::kFloat);
    return {{"validation_gap", (samples.mean() - 3.0).abs()}, {"validation_std", samples.std()}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Sequential generator_{nullptr}, discriminator_{nullptr};
  std::shared_ptr<torch::optim::Adam> opt_g_, opt_d_;
  torch::Tensor real_, noise_;
};

#ifndef DTL_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  torch::set_num_threads(1);
  auto ctx = dtl::init(argc, argv,
                       {.hparams = {{"lr", 0.002}, {"global_batch_size", 64}, {"amp_level", "O1"}}, .seed = 3});
  GanTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Epoch{5},
                                .validation_period = dtl::Epoch{1},
                                .reporting_period = dtl::Batch{32},
                                .searcher_metric = "validation_gap"});
  return 0;
}
#endif
