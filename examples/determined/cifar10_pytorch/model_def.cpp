// Determined's examples/computer_vision/cifar10_pytorch (model_def.py, const.yaml), ported line by
// line: the Keras-style CNN, RMSprop(alpha=0.9) with the learning-rate-decay hyperparameter as
// weight decay, cross entropy, and accuracy as a Python number in train_batch and evaluate_batch;
// validation every epoch (const.yaml's min_validation_period). tests/determined_examples/ trains
// it beside Determined's own Python under det.pytorch.Trainer, bit for bit.
//   ./cifar10_pytorch --config examples/determined/cifar10_pytorch/const.yaml   # needs ./data (CIFAR-10 binary)
//
// Changes, each because C++ or LibTorch differs: nn.Dropout2d is dtl::nn::Dropout2d (LibTorch's
// drops whole rows of the 2-D input before the last layer); the Sequential is filled with
// push_back (in Python's order); the data come from the CIFAR-10 binary files in `data`
// (torchvision's CIFAR10 reads the Python pickles and downloads them), then ToTensor's and
// Normalize's arithmetic.
#include <dtl/trainer.hpp>

#include <fstream>
#include <iostream>

namespace {

// Constants about the data set.
constexpr std::int64_t IMAGE_SIZE = 32;
constexpr std::int64_t NUM_CHANNELS = 3;
constexpr std::int64_t NUM_CLASSES = 10;

/// Return the accuracy rate based on dense predictions and sparse labels.
double accuracy_rate(const torch::Tensor& predictions, const torch::Tensor& labels) {
  TORCH_CHECK(predictions.size(0) == labels.size(0), "Predictions and labels must have the same length.");
  TORCH_CHECK(labels.dim() == 1, "Labels must be a column vector.");
  return static_cast<double>(predictions.argmax(1).eq(labels.to(torch::kLong)).sum().item<std::int64_t>()) /
         static_cast<double>(predictions.size(0));
}

/// CIFAR-10's binary files (data_batch_1..5.bin, test_batch.bin: a label byte, then 3072 bytes of
/// channel-major 32x32 pixels, per image) under `dir`, as ToTensor and
/// Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)) make them.
dtl::TensorDataset<2> cifar10(const std::filesystem::path& dir, bool train) {
  std::vector<std::string> files;
  if (train)
    for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  else
    files.push_back("test_batch.bin");
  std::vector<std::uint8_t> bytes;
  for (const auto& name : files) {
    std::ifstream in(dir / name, std::ios::binary);
    if (!in) throw dtl::DataError("cifar10: " + (dir / name).string() + " not found: put CIFAR-10's binary version in " + dir.string());
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  constexpr std::int64_t record = 1 + NUM_CHANNELS * IMAGE_SIZE * IMAGE_SIZE;
  if (bytes.empty() || bytes.size() % record != 0)
    throw dtl::DataError("cifar10: " + dir.string() + ": the files are not whole 3073-byte records");
  const auto n = static_cast<std::int64_t>(bytes.size()) / record;
  auto raw = torch::from_blob(bytes.data(), {n, record}, torch::kUInt8);
  auto labels = raw.select(1, 0).to(torch::kInt64);
  auto x = raw.slice(1, 1).reshape({n, NUM_CHANNELS, IMAGE_SIZE, IMAGE_SIZE}).to(torch::kFloat32).div(255);
  x.sub_(0.5).div_(0.5);
  return dtl::TensorDataset(std::move(x), std::move(labels));
}

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

}  // namespace

class CIFARTrial : public dtl::PyTorchTrial<CIFARTrial> {
 public:
  explicit CIFARTrial(dtl::PyTorchTrialContext& context) : context(context) {
    download_directory = "data";

    torch::nn::Sequential net;
    net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(NUM_CHANNELS, IMAGE_SIZE, {3, 3})));
    net->push_back(torch::nn::ReLU());
    net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, {3, 3})));
    net->push_back(torch::nn::ReLU());
    net->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions({2, 2})));
    net->push_back(dtl::nn::Dropout2d(context.get_hparam<double>("layer1_dropout")));
    net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, {3, 3}).padding(1)));
    net->push_back(torch::nn::ReLU());
    net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 64, {3, 3})));
    net->push_back(torch::nn::ReLU());
    net->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions({2, 2})));
    net->push_back(dtl::nn::Dropout2d(context.get_hparam<double>("layer2_dropout")));
    net->push_back(torch::nn::Flatten());  // model_def.py's Flatten: x.contiguous().view(x.size(0), -1)
    net->push_back(torch::nn::Linear(2304, 512));
    net->push_back(torch::nn::ReLU());
    net->push_back(dtl::nn::Dropout2d(context.get_hparam<double>("layer3_dropout")));
    net->push_back(torch::nn::Linear(512, NUM_CLASSES));
    model = context.wrap_model(net);

    optimizer = context.wrap_optimizer(torch::optim::RMSprop(
        model->parameters(), torch::optim::RMSpropOptions(context.get_hparam<double>("learning_rate"))
                                 .weight_decay(context.get_hparam<double>("learning_rate_decay"))
                                 .alpha(0.9)));
  }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [data, labels] = batch;

    auto output = model->forward(data);
    auto loss = torch::nn::functional::cross_entropy(output, labels);
    const double accuracy = accuracy_rate(output, labels);

    context.backward(loss);
    context.step_optimizer(optimizer);
    return {{"loss", loss}, {"train_error", 1.0 - accuracy}, {"train_accuracy", accuracy}};
  }

  /// Calculate validation metrics for a batch and return them as a dictionary.
  dtl::Metrics evaluate_batch(Batch& batch) {
    auto& [data, labels] = batch;

    auto output = model->forward(data);
    const double accuracy = accuracy_rate(output, labels);
    return {{"validation_accuracy", accuracy}, {"validation_error", 1.0 - accuracy}};
  }

  auto build_training_data_loader() {
    auto trainset = cifar10(download_directory, true);
    return dtl::DataLoader(std::move(trainset), {.batch_size = context.get_per_slot_batch_size()});
  }

  auto build_validation_data_loader() {
    auto valset = cifar10(download_directory, false);
    return dtl::DataLoader(std::move(valset), {.batch_size = context.get_per_slot_batch_size()});
  }

 private:
  dtl::PyTorchTrialContext& context;
  std::string download_directory;
  torch::nn::Sequential model{nullptr};
  std::shared_ptr<torch::optim::RMSprop> optimizer;
};

// The harness's part for a legacy `entrypoint: model_def:CIFARTrial`: const.yaml's searcher length
// (32 epochs) and validation every epoch (its min_validation_period).
int main(int argc, char** argv) {
  auto context = dtl::init(argc, argv);
  try {
    CIFARTrial trial(context);
    dtl::Trainer(trial, context).fit({.max_length = dtl::Epoch{32}, .validation_period = dtl::Epoch{1}});
  } catch (const dtl::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
