// Determined's checkpoint acceptance cases (semantics §7): T7 resume equivalence (metrics equal,
// with a per-batch LR scheduler, momentum and shuffled data), T8 RNG restore, T16 the `best`
// policy, T17 the files a checkpoint holds.
#include "../core/test_trials.hpp"

#include <fstream>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

// Linear regression on shuffled data, SGD with momentum, StepLR every batch; validation draws
// from the global RNG (so the RNG state must survive a resume). Scripted validation values, when
// given, replace the loss (for the checkpoint-policy cases).
class ResumeTrial : public dtl::PyTorchTrial<ResumeTrial> {
 public:
  ResumeTrial(dtl::PyTorchTrialContext& ctx, std::vector<double> script = {}) : ctx_(ctx), script_(std::move(script)) {
    torch::manual_seed(7);
    model_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt_, 10, 0.9), dtl::StepMode::STEP_EVERY_BATCH);
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(3);
    x_ = torch::randn({96, 3}, g);
    y_ = (x_.matmul(torch::tensor({0.5, -1.0, 2.0})) + 0.1).unsqueeze(1);
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8, .shuffle = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 32}); }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}, {"lr", opt_->param_groups()[0].options().get_lr()}};
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    const double noise = torch::rand({1}).item<double>();  // the global RNG, as T8's validation
    if (!script_.empty()) return {{"validation_loss", script_.at(static_cast<std::size_t>(validations_++ / 3))}};
    return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}, {"noise", noise}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  std::vector<double> script_;
  std::int64_t validations_ = 0;  // evaluate_batch calls (3 batches per validation)
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

dtl::InitOptions options(const std::filesystem::path& dir, std::uint64_t seed = 1) {
  auto o = test::init_options("resume", 8, 0.05);
  o.run_dir = dir;
  o.seed = seed;
  return o;
}

}  // namespace

TEST_CASE("T7: 100 batches, checkpoint, resume to 200 == 200 straight: metrics and weights identical") {
  const auto base = test::temp_run_dir("t7");
  const dtl::FitOptions fit{.max_length = dtl::Batch{200},
                            .validation_period = dtl::Batch{50},
                            .reporting_period = dtl::Batch{25},
                            .quiet = true};
  torch::Tensor straight_w, resumed_w;
  {
    auto ctx = dtl::init(options(base / "B"));
    ResumeTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit(fit);
    straight_w = ctx.models()[0]->parameters()[0].detach().clone();
  }
  {
    auto ctx = dtl::init(options(base / "A"));
    ResumeTrial trial(ctx);
    auto first = fit;
    first.max_length = dtl::Batch{100};
    dtl::Trainer(trial, ctx).fit(first);
  }
  {
    auto ctx = dtl::init(options(base / "A"));  // the same run directory, a new process's worth of state
    ResumeTrial trial(ctx);
    auto second = fit;
    second.latest_checkpoint = test::latest_checkpoint(base / "A");
    dtl::Trainer(trial, ctx).fit(second);
    resumed_w = ctx.models()[0]->parameters()[0].detach().clone();
  }
  CHECK(torch::equal(resumed_w, straight_w));
  const auto train_b = test::records(base / "B", "training"), train_a = test::records(base / "A", "training");
  REQUIRE(train_b.size() == 8);
  CHECK(train_a == train_b);  // loss and lr of every report, bit for bit (the LR schedule included)
  CHECK(test::records(base / "A", "validation") == test::records(base / "B", "validation"));
  std::filesystem::remove_all(base);
}

TEST_CASE("T8: the RNG state resumes: a different seed after resume changes nothing") {
  const auto base = test::temp_run_dir("t8");
  const dtl::FitOptions fit{.max_length = dtl::Batch{5},
                            .validation_period = dtl::Batch{1},
                            .checkpoint_period = dtl::Batch{1},
                            .quiet = true};
  std::filesystem::path first_checkpoint;
  {
    auto ctx = dtl::init(options(base / "original"));
    ResumeTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit(fit);
  }
  // The checkpoint taken after batch 1 (metadata says which).
  for (const auto& e : std::filesystem::directory_iterator(base / "original" / "checkpoints")) {
    if (!e.is_directory()) continue;
    nlohmann::json meta;
    std::ifstream(e.path() / "metadata.json") >> meta;
    if (meta["steps_completed"] == 1) first_checkpoint = e.path();
  }
  REQUIRE(!first_checkpoint.empty());
  {
    auto ctx = dtl::init(options(base / "resumed", /*seed=*/99));
    ResumeTrial trial(ctx);
    auto resumed = fit;
    resumed.latest_checkpoint = first_checkpoint;
    dtl::Trainer(trial, ctx).fit(resumed);
  }
  const auto original = test::records(base / "original", "validation"), again = test::records(base / "resumed", "validation");
  REQUIRE(original.size() == 5);
  REQUIRE(again.size() == 4);
  CHECK(std::vector<nlohmann::json>(original.begin() + 1, original.end()) == again);
  std::filesystem::remove_all(base);
}

TEST_CASE("T16: checkpoint_policy best checkpoints on a strictly better searcher metric") {
  auto run = [](std::vector<double> losses, bool smaller_is_better) {
    const auto dir = test::temp_run_dir("t16");
    auto ctx = dtl::init(options(dir));
    ResumeTrial trial(ctx, std::move(losses));
    test::Record rec;
    dtl::Trainer(trial, ctx)
        .fit({.max_length = dtl::Batch{20},
              .validation_period = dtl::Batch{5},
              .checkpoint_policy = dtl::CheckpointPolicy::best,
              .quiet = true,
              .smaller_is_better = smaller_is_better});
    std::vector<std::int64_t> steps;
    for (const auto& e : std::filesystem::directory_iterator(dir / "checkpoints")) {
      if (!e.is_directory()) continue;
      nlohmann::json meta;
      std::ifstream(e.path() / "metadata.json") >> meta;
      steps.push_back(meta["steps_completed"]);
    }
    std::sort(steps.begin(), steps.end());
    std::filesystem::remove_all(dir);
    return steps;
  };
  using V = std::vector<std::int64_t>;
  // The first validation is always better than the initial +inf (or -inf); then only strict
  // improvements; the final checkpoint at 20 happens anyway unless the last validation made one.
  CHECK(run({3.0, 2.0, 2.5, 2.5}, true) == V{5, 10, 20});
  CHECK(run({3.0, 2.0, 2.5, 1.0}, true) == V{5, 10, 20});  // at 20 by the policy, not twice
  CHECK(run({1.0, 2.0, 1.5, 3.0}, false) == V{5, 10, 20});
  CHECK(run({1.0, 1.0, 0.5, 0.9}, false) == V{5, 20});  // equal is not better
}

TEST_CASE("T17: a checkpoint's files and keys") {
  const auto dir = test::temp_run_dir("t17");
  {
    auto ctx = dtl::init(options(dir));
    ResumeTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{3}, .quiet = true});
  }
  const auto ckpt = test::latest_checkpoint(dir);
  const auto root = dtl::detail::load_pickle_archive(ckpt / "state_dict.pth").toGenericDict();
  std::set<std::string> keys;
  for (const auto& e : root) keys.insert(e.key().toStringRef());
  CHECK(keys == std::set<std::string>{"callbacks", "lr_schedulers_state_dict", "models_state_dict",
                                      "optimizers_state_dict", "rng_state"});
  const auto model = root.at("models_state_dict").toListRef()[0].toGenericDict();
  CHECK(model.contains("weight"));
  CHECK(model.contains("bias"));
  const auto sched = dtl::detail::ivalue_to_json(root.at("lr_schedulers_state_dict").toListRef()[0]);
  for (const char* k : {"step_size", "gamma", "base_lrs", "last_epoch", "_step_count", "_last_lr",
                        DTL_TORCH_2 ? "_is_initial" : "verbose", "_get_lr_called_within_step"})
    CHECK_MESSAGE(sched.contains(k), k);
  CHECK(sched["last_epoch"] == 3);
  nlohmann::json meta, load_data, trial_state;
  std::ifstream(ckpt / "metadata.json") >> meta;
  std::ifstream(ckpt / "load_data.json") >> load_data;
  std::ifstream(ckpt / "trial_state.json") >> trial_state;
  CHECK(meta["steps_completed"] == 3);
  CHECK(meta["format"] == "pickle");
  CHECK(meta["framework"].get<std::string>().starts_with("torch-"));
  CHECK(meta.contains("dtl_version"));
  CHECK(load_data["trial_type"] == "PyTorchTrial");
  CHECK(load_data["hparams"]["learning_rate"] == 0.05);
  for (const char* k : {"batches_trained", "epochs_trained", "last_val", "last_ckpt", "trial_seed", "data_position"})
    CHECK_MESSAGE(trial_state.contains(k), k);
  std::filesystem::remove_all(dir);
}
