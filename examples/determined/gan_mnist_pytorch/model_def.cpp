// Determined's examples/gan/gan_mnist_pytorch (model_def.py, data.py, const.yaml), ported line by
// line: a generator and a discriminator wrapped as two models, an Adam each, LambdaLR (0.95^epoch)
// on the generator's every epoch, and train_batch's two passes, which switch the models'
// requires_grad and draw the noise from the global generator. tests/determined_examples/ trains it
// beside Determined's own Python under det.pytorch.Trainer, bit for bit.
//   ./gan_mnist_pytorch --config examples/determined/gan_mnist_pytorch/const.yaml   # needs ./data (MNIST IDX files)
//
// Changes: the Sequentials are filled with push_back (in Python's order); the data come from the
// MNIST IDX files in `data` (data.py downloads a tarball first), normalized as data.py does; and
// the sampled images are not logged to TensorBoard (model_def.py's make_grid is torchvision's; dtl
// writes scalars only), on both sides of the test.
#include <dtl/data/idx.hpp>
#include <dtl/trainer.hpp>

#include <cmath>
#include <iostream>

namespace {

/// nn.Module.requires_grad_: every parameter's flag.
void requires_grad_(torch::nn::Module& module, bool requires_grad) {
  for (auto& p : module.parameters()) p.requires_grad_(requires_grad);
}

class GeneratorImpl : public torch::nn::Module {
 public:
  GeneratorImpl(std::int64_t latent_dim, std::vector<std::int64_t> img_shape) : img_shape(std::move(img_shape)) {
    auto block = [&](std::int64_t in_feat, std::int64_t out_feat, bool normalize = true) {
      model->push_back(torch::nn::Linear(in_feat, out_feat));
      if (normalize) model->push_back(torch::nn::BatchNorm1d(torch::nn::BatchNorm1dOptions(out_feat).eps(0.8)));
      model->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)));
    };
    block(latent_dim, 128, /*normalize=*/false);
    block(128, 256);
    block(256, 512);
    block(512, 1024);
    std::int64_t numel = 1;
    for (auto d : this->img_shape) numel *= d;
    model->push_back(torch::nn::Linear(1024, numel));
    model->push_back(torch::nn::Tanh());
    register_module("model", model);
  }

  torch::Tensor forward(torch::Tensor z) {
    auto img = model->forward(z);
    std::vector<std::int64_t> shape{img.size(0)};
    shape.insert(shape.end(), img_shape.begin(), img_shape.end());
    return img.contiguous().view(shape);
  }

 private:
  std::vector<std::int64_t> img_shape;
  torch::nn::Sequential model;
};
TORCH_MODULE(Generator);

class DiscriminatorImpl : public torch::nn::Module {
 public:
  explicit DiscriminatorImpl(const std::vector<std::int64_t>& img_shape) {
    std::int64_t numel = 1;
    for (auto d : img_shape) numel *= d;
    model->push_back(torch::nn::Linear(numel, 512));
    model->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)));
    model->push_back(torch::nn::Linear(512, 256));
    model->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)));
    model->push_back(torch::nn::Linear(256, 1));
    model->push_back(torch::nn::Sigmoid());
    register_module("model", model);
  }

  torch::Tensor forward(torch::Tensor img) {
    auto img_flat = img.contiguous().view({img.size(0), -1});
    auto validity = model->forward(img_flat);

    return validity;
  }

 private:
  torch::nn::Sequential model;
};
TORCH_MODULE(Discriminator);

// data.py: MNIST normalized to [-1, 1].
dtl::TensorDataset<2> get_dataset(const std::string& data_dir, bool train) {
  return dtl::load_mnist(data_dir, train ? dtl::MnistSplit::train : dtl::MnistSplit::test,
                         {.normalize = std::pair{0.5, 0.5}});
}

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

}  // namespace

class GANTrial : public dtl::PyTorchTrial<GANTrial> {
 public:
  explicit GANTrial(dtl::PyTorchTrialContext& context) : context(context) {
    download_directory = "data";

    // Initialize the models.
    const std::vector<std::int64_t> mnist_shape{1, 28, 28};
    generator = context.wrap_model(Generator(context.get_hparam<std::int64_t>("latent_dim"), mnist_shape));
    discriminator = context.wrap_model(Discriminator(mnist_shape));

    // Initialize the optimizers and learning rate scheduler.
    const auto lr = context.get_hparam<double>("lr");
    const auto b1 = context.get_hparam<double>("b1");
    const auto b2 = context.get_hparam<double>("b2");
    opt_g = context.wrap_optimizer(
        torch::optim::Adam(generator->parameters(), torch::optim::AdamOptions(lr).betas({b1, b2})));
    opt_d = context.wrap_optimizer(
        torch::optim::Adam(discriminator->parameters(), torch::optim::AdamOptions(lr).betas({b1, b2})));
    lr_g = context.wrap_lr_scheduler(
        dtl::lr::LambdaLR(opt_g, [](std::int64_t epoch) { return std::pow(0.95, epoch); }),
        dtl::StepMode::STEP_EVERY_EPOCH);
  }

  auto build_training_data_loader() {
    auto train_data = get_dataset(download_directory, true);
    return dtl::DataLoader(std::move(train_data), {.batch_size = context.get_per_slot_batch_size()});
  }

  auto build_validation_data_loader() {
    auto validation_data = get_dataset(download_directory, false);
    return dtl::DataLoader(std::move(validation_data), {.batch_size = context.get_per_slot_batch_size()});
  }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& imgs = std::get<0>(batch);

    // Train generator.
    // Set `requires_grad_` to only update parameters on the generator.
    requires_grad_(*generator, true);
    requires_grad_(*discriminator, false);

    // Sample noise and generator images.
    auto z = torch::randn({imgs.size(0), context.get_hparam<std::int64_t>("latent_dim")});
    z = context.to_device(z);
    auto generated_imgs = generator->forward(z);

    // Calculate generator loss.
    auto valid = torch::ones({imgs.size(0), 1});
    valid = context.to_device(valid);
    auto g_loss = torch::binary_cross_entropy(discriminator->forward(generated_imgs), valid);

    // Run backward pass and step the optimizer for the generator.
    context.backward(g_loss);
    context.step_optimizer(opt_g);

    // Train discriminator.
    // Set `requires_grad_` to only update parameters on the discriminator.
    requires_grad_(*generator, false);
    requires_grad_(*discriminator, true);

    // Calculate discriminator loss with a batch of real images and a batch of fake images.
    valid = torch::ones({imgs.size(0), 1});
    valid = context.to_device(valid);
    auto real_loss = torch::binary_cross_entropy(discriminator->forward(imgs), valid);
    auto fake = torch::zeros({generated_imgs.size(0), 1});
    fake = context.to_device(fake);
    auto fake_loss = torch::binary_cross_entropy(discriminator->forward(generated_imgs.detach()), fake);
    auto d_loss = (real_loss + fake_loss) / 2;

    // Run backward pass and step the optimizer for the generator.
    context.backward(d_loss);
    context.step_optimizer(opt_d);

    return {{"loss", d_loss}, {"g_loss", g_loss}, {"d_loss", d_loss}};
  }

  dtl::Metrics evaluate_batch(Batch& batch) {
    auto& imgs = std::get<0>(batch);
    auto valid = torch::ones({imgs.size(0), 1});
    valid = context.to_device(valid);
    auto loss = torch::binary_cross_entropy(discriminator->forward(imgs), valid);
    return {{"loss", loss}};
  }

 private:
  dtl::PyTorchTrialContext& context;
  std::string download_directory;
  Generator generator{nullptr};
  Discriminator discriminator{nullptr};
  std::shared_ptr<torch::optim::Adam> opt_g, opt_d;
  std::shared_ptr<dtl::lr::LambdaLR> lr_g;
};

// The harness's part for a legacy `entrypoint: model_def:GANTrial`: const.yaml's searcher length.
int main(int argc, char** argv) {
  auto context = dtl::init(argc, argv);
  try {
    GANTrial trial(context);
    dtl::Trainer(trial, context).fit({.max_length = dtl::Batch{40000}});
  } catch (const dtl::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
