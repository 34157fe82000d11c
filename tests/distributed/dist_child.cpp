// The trainee of the distributed tests (tests/distributed/distributed_test.cpp), launched as 1, 2
// or 3 real processes — by torchrun or by a plain environment. A small regression MLP (optional
// dropout, an optional parameter that never gets a gradient), with T10's and T11's custom
// reducers. Every rank writes what it ended with to <run_dir>/rank<R>.json: its exact weights,
// its last validation metrics and the custom reducers' results.
//   dist_child --run-dir DIR --max-length batches=N [--hparam dropout=0.2] [--resume latest]
// Environment: DTL_TEST_AGG (aggregation frequency), DTL_TEST_SLEEP_MS (per batch),
// DTL_TEST_FAIL_AT (this rank throws at that batch), DTL_TEST_FAIL_RANK, DTL_TEST_RANK1_ARGS
// (arguments only rank 1 gets).
#include <dtl/trainer.hpp>

#include "../support/t10_reducers.hpp"

#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

std::int64_t env_or(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

// T10's reducer, as a class and as a function (tests/support/t10_reducers.hpp).
using test_support::weighted_sum;
using test_support::WeightedSum;

class SlowCheckpoint : public dtl::PyTorchCallback {
 public:
  explicit SlowCheckpoint(std::int64_t ms) : ms_(ms) {}
  void on_checkpoint_write_end(const std::filesystem::path&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
  }

 private:
  std::int64_t ms_;
};

class DistTrial : public dtl::PyTorchTrial<DistTrial> {
 public:
  explicit DistTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    const double dropout = ctx.get_hparams().value("dropout", 0.0);
    torch::manual_seed(5 + static_cast<std::uint64_t>(ctx.distributed().rank));  // different on purpose: rank 0's wins
    const auto hidden = ctx.get_hparam<std::int64_t>("hidden");
    model_ = torch::nn::Sequential(torch::nn::Linear(6, hidden), torch::nn::Tanh(), torch::nn::Dropout(dropout),
                                   torch::nn::Linear(hidden, 1));
    if (ctx.get_hparams().value("unused", false))  // a parameter forward never uses
      model_->register_parameter("unused_bias", torch::zeros({3}));
    const auto& hp = ctx.get_hparams();
    model_ = ctx.wrap_model(model_, {.bucket_cap_mb = hp.contains("bucket_mb")
                                                          ? std::optional<double>(hp.at("bucket_mb").get<double>())
                                                          : std::nullopt,
                                     .find_unused_parameters = hp.value("find_unused", false)});
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    by_class_ = ctx.wrap_reducer(WeightedSum{}, "by_class");
    by_function_ = ctx.wrap_reducer(weighted_sum, "by_function");
    Concat concat = [](const std::vector<std::vector<std::int64_t>>& batches) {
      std::vector<std::int64_t> flat;
      for (const auto& b : batches) flat.insert(flat.end(), b.begin(), b.end());
      return flat == expected_order(flat.size()) ? static_cast<double>(std::accumulate(flat.begin(), flat.end(), 0))
                                                 : -1.0;
    };
    order_ = ctx.wrap_reducer(concat, "ordered_sum", dtl::ReducerPhases{.for_training = false});
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(11);
    x_ = torch::randn({96, 6}, g);
    y_ = x_.sum(1, true).sin();
    // T11: 47 validation items whose label is their index.
    vx_ = torch::randn({47, 6}, g);
    vy_ = torch::arange(47, torch::kFloat).unsqueeze(1);
    fail_at_ = env_or("DTL_TEST_FAIL_AT", -1);
    fail_rank_ = env_or("DTL_TEST_FAIL_RANK", 1);
    sleep_ms_ = env_or("DTL_TEST_SLEEP_MS", 0);
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(vx_, vy_), {.batch_size = 2}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t batch_idx) {
    if (batch_idx == fail_at_ && ctx_.distributed().rank == fail_rank_)
      throw std::runtime_error("injected failure at batch " + std::to_string(batch_idx));
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    const double label_sum = static_cast<double>(std::get<0>(b).size(0));  // T10 feeds the batch size
    by_class_->update(label_sum, batch_idx);
    by_function_->update({label_sum, batch_idx});
    auto loss = torch::mse_loss(model_->forward(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b, std::int64_t batch_idx) {
    const auto& y = std::get<1>(b);
    std::vector<std::int64_t> labels;
    for (std::int64_t i = 0; i < y.size(0); ++i) labels.push_back(static_cast<std::int64_t>(y[i][0].item<float>()));
    order_->update(labels);
    by_class_->update(static_cast<double>(y.size(0)), batch_idx);
    by_function_->update({static_cast<double>(y.size(0)), batch_idx});
    auto pred = model_->forward(std::get<0>(b));
    return {{"validation_loss", torch::mse_loss(pred, torch::sin(std::get<0>(b).sum(1, true)))},
            {"max_label", y.max()}};
  }
  dtl::ReducerMap evaluation_reducer() {
    return {{"validation_loss", dtl::Reducer::avg}, {"max_label", dtl::Reducer::max}};
  }

  torch::nn::Sequential& model() { return model_; }

  // DTL_TEST_CKPT_SLEEP_MS: the chief's checkpoint takes that long (chief-only work that must not
  // trip the other ranks' timeout while the chief is alive).
  dtl::Callbacks build_callbacks() {
    dtl::Callbacks c;
    if (const auto ms = env_or("DTL_TEST_CKPT_SLEEP_MS", 0); ms > 0)
      c.emplace_back("slow_checkpoint", std::make_shared<SlowCheckpoint>(ms));
    return c;
  }

 private:
  static std::vector<std::int64_t> expected_order(std::size_t n) {
    std::vector<std::int64_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
  }
  using Concat = std::function<double(const std::vector<std::vector<std::int64_t>>&)>;
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<WeightedSum> by_class_;
  std::shared_ptr<dtl::SimpleReducer<std::pair<double, std::int64_t>, decltype(&weighted_sum)>> by_function_;
  std::shared_ptr<dtl::SimpleReducer<std::vector<std::int64_t>, Concat>> order_;
  torch::Tensor x_, y_, vx_, vy_;
  std::int64_t fail_at_ = -1, fail_rank_ = 1, sleep_ms_ = 0;
};

}  // namespace

// DTL_TEST_DDP_PARITY=OUT: instead of the trial, the steps tests/distributed/ddp_reference.py
// takes under PyTorch's DDP, on dtl's gradient synchronizer; rank 0 writes the parameters'
// float32 bytes after each step to OUT.
int ddp_parity(const char* out_path) {
  auto options = dtl::detail::distributed_options_from_environment();
  if (!options) throw dtl::ConfigError("DTL_TEST_DDP_PARITY needs a distributed environment");
  options->backend = dtl::DistributedBackend::gloo;
  dtl::DistributedContext dist(*options);
  torch::manual_seed(0);
  // The layers one after another: as Sequential's arguments g++ would build the last one first
  // (the initialization-order pitfall of docs/porting.md), and the weights would not be Python's.
  torch::nn::Linear first(784, 256);
  torch::nn::Linear second(256, 10);
  torch::nn::Sequential net(first, torch::nn::ReLU(), second);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : net->named_parameters()) named.emplace_back(p.key(), p.value());
  dtl::detail::GradientSynchronizer sync(dist, named, {});
  torch::manual_seed(100 + static_cast<std::uint64_t>(dist.rank));
  const auto x = torch::randn({8, 784});
  const auto y = torch::randint(0, 10, {8});
  torch::optim::SGD opt(net->parameters(), 0.1);
  std::ofstream out;
  if (dist.is_chief()) out.open(out_path, std::ios::binary);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    opt.step();
    if (!dist.is_chief()) continue;
    for (const auto& p : net->parameters()) {
      const auto c = p.detach().contiguous();
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * c.element_size()));
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (const char* parity = std::getenv("DTL_TEST_DDP_PARITY")) {
    torch::set_num_threads(1);
    return ddp_parity(parity);
  }
  try {
    // The code's defaults of every hyperparameter the tests set with --hparam (a name nothing
    // defines is an error).
    dtl::InitOptions opts{
        .hparams = {{"global_batch_size", 8}, {"dropout", 0.0}, {"unused", false}, {"find_unused", false}, {"hidden", 16}}};
    opts.aggregation_frequency = env_or("DTL_TEST_AGG", 1);
    // DTL_TEST_RANK1_ARGS: more arguments for rank 1 only (ranks that disagree).
    std::vector<std::string> args(argv, argv + argc);
    const char* rank = std::getenv("RANK");
    if (const char* extra = std::getenv("DTL_TEST_RANK1_ARGS"); extra && rank && std::string(rank) == "1") {
      std::istringstream words(extra);
      for (std::string w; words >> w;) args.push_back(w);
    }
    std::vector<const char*> argv2;
    for (const auto& a : args) argv2.push_back(a.c_str());
    auto ctx = dtl::init(static_cast<int>(argv2.size()), argv2.data(), opts);
    DistTrial trial(ctx);
    dtl::Trainer trainer(trial, ctx);
    trainer.fit({.max_length = dtl::Batch{24},
                 .validation_period = dtl::Batch{12},
                 .checkpoint_period = dtl::Batch{4},
                 .reporting_period = dtl::Batch{6},
                 .checkpoint_policy = dtl::CheckpointPolicy::none,
                 .quiet = true});
    nlohmann::json out;
    out["rank"] = ctx.distributed().rank;
    out["size"] = ctx.distributed().size;
    out["local_rank"] = ctx.distributed().local_rank;
    out["local_size"] = ctx.distributed().local_size;
    out["cross_rank"] = ctx.distributed().cross_rank;
    out["cross_size"] = ctx.distributed().cross_size;
    std::vector<double> weights;
    for (const auto& p : trial.model()->parameters()) {
      auto flat = p.detach().to(torch::kDouble).reshape(-1).contiguous();
      weights.insert(weights.end(), flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
    }
    out["weights"] = weights;
    out["batches_trained"] = trainer.state().batches_trained;
    out["epochs_trained"] = trainer.state().epochs_trained;
    // An object collective of unequal sizes per rank: rank r contributes r+1 numbers.
    const auto gathered = ctx.distributed().allgather(nlohmann::json(std::vector<int>(ctx.distributed().rank + 1, 7)));
    out["allgather_sizes"] = nlohmann::json::array();
    for (const auto& g : gathered) out["allgather_sizes"].push_back(g.size());
    out["broadcast"] =
        ctx.distributed().broadcast(nlohmann::json("from rank " + std::to_string(ctx.distributed().rank)));
    std::ofstream(ctx.run_dir() / ("rank" + std::to_string(ctx.distributed().rank) + ".json")) << out.dump();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
