// Small trials and callbacks shared by the trainer tests.
#ifndef DTL_TESTS_CORE_TEST_TRIALS_HPP
#define DTL_TESTS_CORE_TEST_TRIALS_HPP

#include "../prelude.hpp"

#include <filesystem>
#include <fstream>
#include <random>

namespace test {

inline std::filesystem::path temp_run_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("dtl-test-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  return dir;
}

/// Determined's OnesDataset: n examples whose input and label are both 1.
inline dtl::TensorDataset<2> ones(std::int64_t n) {
  return dtl::TensorDataset(torch::ones({n, 1}), torch::ones({n, 1}));
}

/// The checkpoint `<run>/checkpoints/latest` points to.
inline std::filesystem::path latest_checkpoint(const std::filesystem::path& run) {
  return dtl::detail::Checkpointer(run / "checkpoints").resolve("latest");
}

/// What the trainer did, as seen from the trial and its callbacks.
struct Record {
  std::int64_t batches = 0;  // batches trained, counted by train_batch
  std::vector<std::int64_t> validations, checkpoints, workloads;
  std::vector<std::int64_t> written;  // batches trained when each checkpoint's write was collected
  std::vector<std::filesystem::path> written_dirs;
  std::vector<std::int64_t> epoch_starts, epoch_ends;
  std::vector<double> weights;         // after each train_batch
  std::vector<std::int64_t> lr_steps;  // batch index at each LR scheduler step
  int trial_startups = 0, training_starts = 0, shutdowns = 0, validation_batches = 0;
  std::vector<dtl::MetricsJson> workload_metrics;
  std::vector<dtl::MetricsJson> validation_metrics;
};

class RecordingCallback : public dtl::PyTorchCallback {
 public:
  explicit RecordingCallback(Record& r) : r_(r) {}
  void on_trial_startup(std::int64_t, const std::optional<std::string>&) override { ++r_.trial_startups; }
  void on_training_start() override { ++r_.training_starts; }
  void on_training_epoch_start(std::int64_t e) override { r_.epoch_starts.push_back(e); }
  void on_training_epoch_end(std::int64_t e) override { r_.epoch_ends.push_back(e); }
  void on_training_workload_end(const dtl::MetricsJson& avg, const dtl::BatchMetrics&) override {
    r_.workloads.push_back(r_.batches);
    r_.workload_metrics.push_back(avg);
  }
  void on_validation_end(const dtl::MetricsJson& m) override {
    r_.validations.push_back(r_.batches);
    r_.validation_metrics.push_back(m);
  }
  // When each checkpoint is taken; written in the background, its write_end comes at a later boundary.
  void on_checkpoint_save_start(c10::impl::GenericDict&) override { r_.checkpoints.push_back(r_.batches); }
  void on_checkpoint_write_end(const std::filesystem::path& dir) override {
    r_.written.push_back(r_.batches);
    r_.written_dirs.push_back(dir);
  }
  void on_trial_shutdown() override { ++r_.shutdowns; }

 private:
  Record& r_;
};

/// Counts its steps into the record, with the batch index it was stepped at.
struct CountingScheduler {
  Record* r;
  dtl::PyTorchTrialContext* ctx;
  void step() { r->lr_steps.push_back(ctx->current_train_batch()); }
};

/// Linear(1, 1, no bias) from w0 = 0, MSE against the label; data x_i = 1 + 0.1 i with label
/// x_i (Determined's IdentityDataset), or all ones (OneVar).
class LinearTrial : public dtl::PyTorchTrial<LinearTrial> {
 public:
  struct Options {
    std::int64_t train_size = 64;
    std::int64_t val_size = 16;
    bool identity = false;
    bool stop_at_30 = false;
    std::optional<std::pair<dtl::StepMode, std::int64_t>> lr_mode;
    std::shared_ptr<dtl::PyTorchCallback> extra_callback;  // beside the recorder, as "extra"
    std::optional<std::int64_t> throw_at_batch;            // train_batch throws std::runtime_error there
  };

  LinearTrial(dtl::PyTorchTrialContext& ctx, Record& rec, Options o) : ctx_(ctx), rec_(rec), o_(o) {
    model_ = ctx.wrap_model(torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
    {
      torch::NoGradGuard g;
      model_->weight.zero_();
    }
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), ctx.get_hparam<double>("learning_rate")));
    if (o.lr_mode) ctx.wrap_lr_scheduler(CountingScheduler{&rec, &ctx}, o.lr_mode->first, o.lr_mode->second);
  }

  auto build_training_data_loader() { return dtl::DataLoader(data(o_.train_size), {.batch_size = bs()}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data(o_.val_size), {.batch_size = bs()}); }
  dtl::Callbacks build_callbacks() {
    dtl::Callbacks cbs{{"recorder", std::make_shared<RecordingCallback>(rec_)}};
    if (o_.extra_callback) cbs.push_back({"extra", o_.extra_callback});
    return cbs;
  }

  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t, std::int64_t batch_idx) {
    if (o_.throw_at_batch && batch_idx == *o_.throw_at_batch) throw std::runtime_error("train_batch failed on purpose");
    auto& [x, y] = batch;
    auto loss = torch::mse_loss(model_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    ++rec_.batches;
    rec_.weights.push_back(model_->weight.item<double>());
    if (o_.stop_at_30 && batch_idx + 1 >= 30) ctx_.set_stop_requested(true);
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t) {
    ++rec_.validation_batches;
    auto& [x, y] = batch;
    return {{"validation_loss", torch::mse_loss(model_(x), y)}};
  }

  [[nodiscard]] double weight() const { return model_->weight.item<double>(); }

 private:
  std::int64_t bs() const { return ctx_.get_per_slot_batch_size(); }
  dtl::TensorDataset<2> data(std::int64_t n) const {
    auto x = o_.identity ? (1.0 + 0.1 * torch::arange(n, torch::kFloat64)).to(torch::kFloat32).unsqueeze(1)
                         : torch::ones({n, 1});
    return dtl::TensorDataset(x, x.clone());
  }

  dtl::PyTorchTrialContext& ctx_;
  Record& rec_;
  Options o_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

/// A run's metrics.jsonl records of one type ("training", "validation"), without the wall-clock
/// field: what two runs that should train identically must agree on.
inline std::vector<nlohmann::json> records(const std::filesystem::path& run, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto r = nlohmann::json::parse(line);
    if (r["type"] != type) continue;
    r.erase("seconds");
    out.push_back(std::move(r));
  }
  return out;
}

inline dtl::InitOptions init_options(const std::string& name, std::int64_t gbs = 4, double lr = 0.001,
                                     std::int64_t aggregation = 1) {
  return {.hparams = {{"learning_rate", lr}, {"global_batch_size", gbs}},
          .aggregation_frequency = aggregation,
          .seed = 1,
          .run_dir = temp_run_dir(name)};
}

}  // namespace test

#endif  // DTL_TESTS_CORE_TEST_TRIALS_HPP
