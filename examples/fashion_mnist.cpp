// The flagship example: a Fashion-MNIST classifier trial in the spirit of Determined's
// mnist_pytorch example, ported line by line. Data from Debian's dataset-fashion-mnist.
//   ./fashion_mnist                                   # 2 epochs, validation every 200 batches
//   ./fashion_mnist --max-length batches=300 --hparam learning_rate=0.02
//   ./fashion_mnist --config examples/fashion_mnist.yaml --resume latest
#include <dtl/data/idx.hpp>
#include <dtl/trainer.hpp>

#include <filesystem>
#include <iostream>

namespace {

// Debian's dataset-fashion-mnist installs the four gzipped IDX files here: no download.
const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Images normalized with the training set's mean and std, labels int64.
dtl::TensorDataset<2> fashion_mnist(const std::filesystem::path& dir, dtl::MnistSplit split) {
  if (!std::filesystem::is_directory(dir))
    throw dtl::DataError("fashion-mnist: " + dir.string() +
                         " not found: install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist) "
                         "or pass --hparam data_dir=DIR");
  return dtl::load_mnist(dir, split, {.normalize = std::pair{0.2860, 0.3530}});
}

struct NetImpl : torch::nn::Module {
  NetImpl(std::int64_t n1, std::int64_t n2, double dropout)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, n1, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(n1, n2, 3)))),
        fc1(register_module("fc1", torch::nn::Linear(n2 * 5 * 5, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))),
        drop(register_module("drop", torch::nn::Dropout(dropout))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);  // 28 -> 26 -> 13
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 13 -> 11 -> 5
    x = drop(torch::relu(fc1(x.flatten(1))));
    return torch::log_softmax(fc2(x), 1);
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
  torch::nn::Dropout drop;
};
TORCH_MODULE(Net);

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

}  // namespace

class FashionMnistTrial : public dtl::PyTorchTrial<FashionMnistTrial> {
 public:
  explicit FashionMnistTrial(dtl::PyTorchTrialContext& ctx)
      : ctx_(ctx),
        train_set_(fashion_mnist(ctx.get_hparam<std::string>("data_dir"), dtl::MnistSplit::train)),
        val_set_(fashion_mnist(ctx.get_hparam<std::string>("data_dir"), dtl::MnistSplit::test)) {
    model_ = ctx.wrap_model(Net(ctx.get_hparam<std::int64_t>("n_filters1"), ctx.get_hparam<std::int64_t>("n_filters2"),
                                ctx.get_hparam<double>("dropout")));
    opt_ = ctx.wrap_optimizer(
        torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(ctx.get_hparam<double>("learning_rate"))
                                                    .momentum(ctx.get_hparam<double>("momentum"))));
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt_, 1, ctx.get_hparam<double>("gamma")), dtl::StepMode::every_epoch);
  }

  auto build_training_data_loader() {
    return dtl::DataLoader(train_set_, {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() {
    return dtl::DataLoader(val_set_, {.batch_size = ctx_.get_per_slot_batch_size()});
  }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto loss = torch::nll_loss(model_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}};
  }

  dtl::Metrics evaluate_batch(Batch& batch, std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto out = model_(x);
    auto accuracy = out.argmax(1).eq(y).to(torch::kFloat64).mean();
    return {{"validation_loss", torch::nll_loss(out, y)}, {"accuracy", accuracy}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  dtl::TensorDataset<2> train_set_, val_set_;
  Net model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

#ifndef DTL_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  auto ctx = dtl::init(argc, argv,
                       {.hparams = {{"global_batch_size", 64},
                                    {"learning_rate", 0.05},
                                    {"momentum", 0.9},
                                    {"gamma", 0.7},
                                    {"n_filters1", 16},
                                    {"n_filters2", 32},
                                    {"dropout", 0.25},
                                    {"data_dir", kFashionMnistDir.string()}}});
  try {
    FashionMnistTrial trial(ctx);
    dtl::Trainer trainer(trial, ctx);
    trainer.fit({.max_length = dtl::Epoch{2},
                 .validation_period = dtl::Batch{300},
                 .checkpoint_period = dtl::Batch{300},
                 .checkpoint_policy = dtl::CheckpointPolicy::best,
                 .searcher_metric = "validation_loss"});
    if (ctx.distributed().is_chief()) std::cout << "run directory: " << ctx.run_dir().string() << "\n";
  } catch (const dtl::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const dtl::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const dtl::DistributedError& e) {  // another rank failed or was lost
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
#endif
