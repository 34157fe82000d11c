// Determined's examples/tutorials/mnist_pytorch (train.py, model.py, data.py, const.yaml), ported
// line by line: the model of model.py, the MNistTrial of train.py (NLLLoss, Adadelta, a batch of
// 64 split across the slots), MNIST from a `data` directory as data.py normalizes it, and run():
// 100 batches with const.yaml's hyperparameters outside a cluster, the searcher's length and the
// latest checkpoint on one. tests/determined_examples/ trains it beside Determined's own Python
// under det.pytorch.Trainer and requires the same losses, validations and weights, bit for bit.
//   ./mnist_pytorch --config examples/determined/mnist_pytorch/const.yaml   # needs ./data (MNIST IDX files)
//
// Two lines differ from the Python on purpose, each because LibTorch differs (docs/porting.md):
// nn.Dropout2d is dtl::nn::Dropout2d (LibTorch's drops whole rows of model.py's 2-D input), and
// the Sequential is filled with push_back (its constructor's arguments would be built, and their
// weights drawn, right to left).
#include <dtl/data/idx.hpp>
#include <dtl/trainer.hpp>

#include <iostream>

namespace {

// model.py
torch::nn::Sequential build_model(dtl::PyTorchTrialContext& ctx) {
  const auto n_filters1 = ctx.get_hparam<std::int64_t>("n_filters1");
  const auto n_filters2 = ctx.get_hparam<std::int64_t>("n_filters2");
  torch::nn::Sequential model;
  model->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, n_filters1, 3).stride(1)));
  model->push_back(torch::nn::ReLU());
  model->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(n_filters1, n_filters2, 3)));
  model->push_back(torch::nn::ReLU());
  model->push_back(torch::nn::MaxPool2d(2));
  model->push_back(dtl::nn::Dropout2d(ctx.get_hparam<double>("dropout1")));
  model->push_back(torch::nn::Flatten());  // model.py's Flatten: x.contiguous().view(x.size(0), -1)
  model->push_back(torch::nn::Linear(144 * n_filters2, 128));
  model->push_back(torch::nn::ReLU());
  model->push_back(dtl::nn::Dropout2d(ctx.get_hparam<double>("dropout2")));
  model->push_back(torch::nn::Linear(128, 10));
  model->push_back(torch::nn::LogSoftmax(1));  // nn.LogSoftmax(): Python's implicit dim is 1 for 2-D input
  return model;
}

// data.py: MNIST normalized with its precomputed mean and standard deviation (no download here:
// the directory holds the IDX files).
dtl::TensorDataset<2> get_dataset(const std::string& data_dir, bool train) {
  return dtl::load_mnist(data_dir, train ? dtl::MnistSplit::train : dtl::MnistSplit::test,
                         {.normalize = std::pair{0.1307, 0.3081}});
}

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

}  // namespace

class MNistTrial : public dtl::PyTorchTrial<MNistTrial> {
 public:
  explicit MNistTrial(dtl::PyTorchTrialContext& context) : context(context) {
    // Trial-level constants.
    data_dir = "data";
    batch_size = 64;
    per_slot_batch_size = batch_size / context.distributed().get_size();

    // Define model.
    model = context.wrap_model(build_model(context));

    // Configure optimizer.
    optimizer = context.wrap_optimizer(
        dtl::optim::Adadelta(model->parameters(), dtl::optim::AdadeltaOptions(context.get_hparam<double>("learning_rate"))));
  }

  auto build_training_data_loader() {
    auto train_data = get_dataset(data_dir, true);
    return dtl::DataLoader(std::move(train_data), {.batch_size = per_slot_batch_size});
  }

  auto build_validation_data_loader() {
    auto validation_data = get_dataset(data_dir, false);
    return dtl::DataLoader(std::move(validation_data), {.batch_size = per_slot_batch_size});
  }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [batch_data, labels] = batch;

    auto output = model->forward(batch_data);
    auto loss = loss_fn(output, labels);

    context.backward(loss);
    context.step_optimizer(optimizer);

    return {{"loss", loss}};
  }

  dtl::Metrics evaluate_batch(Batch& batch, std::int64_t /*batch_idx*/) {
    auto& [batch_data, labels] = batch;

    auto output = model->forward(batch_data);
    const double validation_loss = loss_fn(output, labels).item<double>();

    auto pred = output.argmax(1, /*keepdim=*/true);
    const double accuracy = static_cast<double>(pred.eq(labels.view_as(pred)).sum().item<std::int64_t>()) /
                            static_cast<double>(batch_data.size(0));

    return {{"validation_loss", validation_loss}, {"accuracy", accuracy}};
  }

 private:
  dtl::PyTorchTrialContext& context;
  std::string data_dir;
  std::int64_t batch_size = 0, per_slot_batch_size = 0;
  // Define loss function.
  torch::nn::NLLLoss loss_fn;
  torch::nn::Sequential model{nullptr};
  std::shared_ptr<dtl::optim::Adadelta> optimizer;
};

// train.py's run(): const.yaml's hyperparameters (--config) and 100 batches outside a cluster;
// on one, the searcher's length and the latest checkpoint (dtl::init reads both from the cluster).
int main(int argc, char** argv) {
  auto context = dtl::init(argc, argv);
  try {
    MNistTrial trial(context);
    dtl::Trainer trainer(trial, context);
    trainer.fit({.max_length = dtl::Batch{100}});  // Train for 100 batches.
  } catch (const dtl::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
