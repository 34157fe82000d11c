// The oracle's trials in dtl: the MLP and the CNN of tests/oracle/det_trials.py (the real
// Determined's side), chosen by the `model` hyperparameter, with the same data (the same
// generator calls, tests/oracle/oracle_common.py), the same models, optimizers, schedule and
// validation. tests/oracle/run_oracle.py runs both and compares them bit for bit.
//   oracle_trials --hparams HP.json --seed N --run-dir DIR [--resume CHECKPOINT]   (1 or N ranks)
// Every rank appends to $DTL_ORACLE_OUT/rank<R>.jsonl what det_trials.py writes (its docstring):
// this rank's loss per batch, the reported training workloads and validations, the checkpoints;
// the chief writes $DTL_ORACLE_OUT/final.pt, the model's state_dict as torch.save writes it.
#include <dtl/trainer.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

constexpr std::int64_t train_size = 96;
constexpr std::int64_t val_size = 40;
constexpr std::int64_t epoch_batches = 12;
constexpr std::uint64_t data_seed = 1234;

std::string out_dir() {
  const char* d = std::getenv("DTL_ORACLE_OUT");
  if (!d || !*d) throw std::runtime_error("oracle_trials: set DTL_ORACLE_OUT to the output directory");
  std::filesystem::create_directories(d);
  return d;
}

/// One JSON object a line, flushed at once (a crash keeps what was seen).
class Log {
 public:
  explicit Log(std::int64_t rank) : out_(out_dir() + "/rank" + std::to_string(rank) + ".jsonl", std::ios::app) {}
  void write(const nlohmann::ordered_json& record) { out_ << record.dump() << '\n' << std::flush; }

 private:
  std::ofstream out_;
};

class Recorder : public dtl::PyTorchCallback {
 public:
  explicit Recorder(Log& log) : log_(log) {}
  void on_training_workload_end(const dtl::MetricsJson& avg, const dtl::BatchMetrics& batches) override {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& b : batches) list.push_back(b);
    log_.write({{"kind", "train"}, {"avg", avg}, {"batches", list}});
  }
  void on_validation_end(const dtl::MetricsJson& metrics) override {
    log_.write({{"kind", "val"}, {"metrics", metrics}});
  }
  void on_checkpoint_write_end(const std::filesystem::path& dir) override {
    log_.write({{"kind", "checkpoint"}, {"dir", dir.string()}});
  }

 private:
  Log& log_;
};

/// (inputs, labels): inputs from a seeded generator, labels from a fixed random teacher.
Batch make_data(bool image) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(data_seed);
  const std::int64_t n = train_size + val_size;
  auto x = image ? torch::randn({n, 1, 8, 8}, g) : torch::randn({n, 16}, g);
  auto teacher = torch::randn({x[0].numel(), 5}, g);
  auto y = x.reshape({n, -1}).matmul(teacher).argmax(1);
  return {x, y};
}

class OracleTrial : public dtl::PyTorchTrial<OracleTrial> {
 public:
  explicit OracleTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx), log_(ctx.distributed().rank) {
    const auto kind = ctx.get_hparam<std::string>("model");
    // tests/cluster/run_cluster_faults.py: hyperparameters a trial rejects (Determined's InvalidHP).
    if (ctx.get_hparams().value("invalid_hp", false)) throw dtl::InvalidHP("the hparam invalid_hp is true");
    const double lr = ctx.get_hparam<double>("learning_rate");
    // Layers in statements, drawn in Python's order (docs/porting.md).
    if (kind == "mlp") {
      model_->push_back(torch::nn::Linear(16, 32));
      model_->push_back(torch::nn::ReLU());
      model_->push_back(torch::nn::Linear(32, 5));
    } else {
      model_->push_back(torch::nn::Conv2d(1, 4, 3));
      model_->push_back(torch::nn::ReLU());
      model_->push_back(torch::nn::MaxPool2d(2));
      model_->push_back(torch::nn::Flatten());
      model_->push_back(torch::nn::Dropout(0.25));
      model_->push_back(torch::nn::Linear(36, 5));
    }
    model_ = ctx.wrap_model(model_);
    if (kind == "mlp") {
      auto sgd = ctx.wrap_optimizer(
          torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(lr).momentum(0.9).weight_decay(1e-4)));
      ctx.wrap_lr_scheduler(dtl::lr::StepLR(sgd, 1, 0.5), dtl::StepMode::STEP_EVERY_EPOCH);
      opt_ = sgd;
    } else {
      opt_ = ctx.wrap_optimizer(torch::optim::Adam(model_->parameters(), torch::optim::AdamOptions(lr)));
    }
    auto [x, y] = make_data(kind == "cnn");
    train_x_ = x.narrow(0, 0, train_size);
    train_y_ = y.narrow(0, 0, train_size);
    val_x_ = x.narrow(0, train_size, val_size);
    val_y_ = y.narrow(0, train_size, val_size);
  }

  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(train_x_, train_y_),
                           {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = ctx_.get_hparam<bool>("shuffle")});
  }
  auto build_validation_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(val_x_, val_y_), {.batch_size = ctx_.get_per_slot_batch_size()});
  }
  dtl::Callbacks build_callbacks() { return {{"recorder", std::make_shared<Recorder>(log_)}}; }

  dtl::Metrics train_batch(Batch& batch, std::int64_t /*epoch_idx*/, std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto loss = torch::nn::functional::cross_entropy(model_->forward(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    log_.write({{"kind", "batch"}, {"loss", static_cast<double>(loss.item<float>())}});
    return {{"loss", loss}};
  }

  dtl::Metrics evaluate_batch(Batch& batch, std::int64_t /*batch_idx*/) {
    auto& [x, y] = batch;
    auto out = model_->forward(x);
    return {{"validation_loss", torch::nn::functional::cross_entropy(out, y)},
            {"accuracy", out.argmax(1).eq(y).to(torch::kFloat32).mean()}};
  }

  void save_final() const { dtl::save_state_dict(*model_, out_dir() + "/final.pt"); }

 private:
  dtl::PyTorchTrialContext& ctx_;
  Log log_;
  torch::nn::Sequential model_;
  std::shared_ptr<torch::optim::Optimizer> opt_;
  torch::Tensor train_x_, train_y_, val_x_, val_y_;
};

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  auto ctx = dtl::init(argc, argv);
  OracleTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{2 * epoch_batches},
                                .validation_period = dtl::Batch{epoch_batches},
                                .checkpoint_period = dtl::Batch{epoch_batches},
                                .checkpoint_policy = dtl::CheckpointPolicy::none});
  if (ctx.distributed().rank == 0) trial.save_final();
}
