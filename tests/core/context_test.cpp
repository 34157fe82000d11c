#include "test_trials.hpp"

#include "../support/errors.hpp"

#include <fstream>

namespace {
/// dtl::init from a command line (`prog` first), as a program's main gets it.
dtl::PyTorchTrialContext init_from_args(std::vector<std::string> args, dtl::InitOptions opts) {
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return dtl::init(static_cast<int>(argv.size()), argv.data(), std::move(opts));
}
}  // namespace

TEST_CASE("context: hyperparameters, batch sizes and errors that name the problem") {
  auto ctx = dtl::init({.hparams = {{"lr", 0.5}, {"global_batch_size", 8}, {"name", "x"}},
                        .seed = 3,
                        .run_dir = test::temp_run_dir("ctx")});
  CHECK(ctx.get_hparam<double>("lr") == 0.5);
  CHECK(ctx.get_per_slot_batch_size() == 8);
  CHECK(ctx.get_global_batch_size() == 8);
  CHECK(ctx.get_trial_seed() == 3);
  CHECK_THROWS_WITH_AS(static_cast<void>(ctx.get_hparam<double>("learning_rate")), doctest::Contains("learning_rate"),
                       dtl::ConfigError);
  CHECK_THROWS_WITH_AS(static_cast<void>(ctx.get_hparam<double>("name")), doctest::Contains("name"), dtl::ConfigError);
  // Before training starts, where-are-we accessors have no answer (Determined's InternalException).
  CHECK_THROWS_AS(static_cast<void>(ctx.current_train_batch()), dtl::InternalException);
  CHECK_THROWS_AS(static_cast<void>(ctx.is_epoch_end()), dtl::InternalException);
  CHECK_FALSE(ctx.get_stop_requested());
  ctx.set_stop_requested(true);
  CHECK(ctx.get_stop_requested());
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("device: a malformed one, or CUDA where there is none, is a ConfigError that says what to do") {
  CHECK_THROWS_WITH_AS(dtl::detail::parse_device("gpu0", "--device gpu0"),
                       "dtl: --device gpu0: not a device; write cpu, cuda or cuda:N", dtl::ConfigError);
  CHECK(dtl::detail::parse_device("cuda:1", "x") == torch::Device(torch::kCUDA, 1));
  CHECK_NOTHROW(dtl::detail::check_device_usable(torch::kCPU, "x"));
  CHECK_THROWS_WITH_AS(dtl::detail::check_device_usable(torch::Device(torch::kMeta), "x"),
                       doctest::Contains("dtl trains on cpu or cuda devices, not meta"), dtl::ConfigError);
  if (torch::cuda::is_available()) return;  // the rest is about a machine without CUDA
  const auto why = dtl::detail::built_with_cuda ? "no CUDA device is available on this machine"
                                                : "this program was built without CUDA";
  CHECK_THROWS_WITH_AS(dtl::init({.device = torch::Device(torch::kCUDA, 0), .run_dir = test::temp_run_dir("dev")}),
                       doctest::Contains(why), dtl::ConfigError);
  CHECK_FALSE(dtl::detail::rng_cuda_device(torch::kCPU, 0));  // no CUDA generator to save
}

TEST_CASE("context: auto_zero_grads=false with aggregation is refused; unknown optimizers too") {
  auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}},
                        .aggregation_frequency = 2,
                        .seed = 1,
                        .run_dir = test::temp_run_dir("ctx2")});
  auto lin = ctx.wrap_model(torch::nn::Linear(1, 1));
  auto opt = ctx.wrap_optimizer(torch::optim::SGD(lin->parameters(), 0.1));
  CHECK_THROWS_AS(ctx.step_optimizer(opt, dtl::NoClip{}, false), dtl::InvalidExperimentException);
  auto stray = std::make_shared<torch::optim::SGD>(lin->parameters(), 0.1);
  CHECK_NOTHROW(ctx.step_optimizer(stray));  // batch 0 of 2 is not an update batch: nothing happens
  std::filesystem::remove_all(ctx.run_dir());

  // Without aggregation every batch steps, so an optimizer that was never wrapped is refused.
  auto plain = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = test::temp_run_dir("ctx3")});
  auto lin2 = plain.wrap_model(torch::nn::Linear(1, 1));
  auto wrapped = plain.wrap_optimizer(torch::optim::SGD(lin2->parameters(), 0.1));
  auto unwrapped = std::make_shared<torch::optim::SGD>(lin2->parameters(), 0.1);
  CHECK_THROWS_WITH_AS(plain.step_optimizer(unwrapped), doctest::Contains("wrap_optimizer"),
                       dtl::InvalidExperimentException);
  CHECK_NOTHROW(plain.step_optimizer(wrapped));
  std::filesystem::remove_all(plain.run_dir());
}

TEST_CASE("fit: the experiment config overrides code, the command line overrides both") {
  const auto dir = test::temp_run_dir("cfg");
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "exp.yaml") << "hyperparameters:\n  learning_rate: 0.001\n  global_batch_size: 4\n"
                                       "searcher:\n  metric: validation_loss\n  max_length: {batches: 12}\n"
                                       "min_validation_period: {batches: 4}\n";
  }
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--config", (dir / "exp.yaml").string(), "--run-dir", (dir / "run").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    test::Record rec;
    auto ctx = init_from_args(args, {.seed = 1});
    test::LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{100}, .checkpoint_policy = dtl::CheckpointPolicy::none});
    std::filesystem::remove_all(dir / "run");
    return rec;
  };
  auto from_config = run({});
  CHECK(from_config.batches == 12);
  CHECK(from_config.validations == std::vector<std::int64_t>{4, 8, 12});
  auto from_cli = run({"--max-length", "batches=6", "--hparam", "learning_rate=0.0"});
  CHECK(from_cli.batches == 6);
  CHECK(from_cli.weights.back() == 0.0);  // lr overridden to 0: the weight never moves
  std::filesystem::remove_all(dir);
}

namespace {
// Reads the run's length where a trial would size a schedule: at construction and when training starts.
struct LengthAtStart : dtl::PyTorchCallback {
  dtl::PyTorchTrialContext& ctx;
  std::int64_t batches = -1;
  explicit LengthAtStart(dtl::PyTorchTrialContext& c) : ctx(c) {}
  void on_training_start() override { batches = ctx.get_max_length_batches(); }
};
}  // namespace

TEST_CASE("context: the run's length, for sizing a schedule: from config or --max-length at construction, from fit() once it starts") {
  const auto dir = test::temp_run_dir("length");
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "epochs.yaml") << "hyperparameters:\n  learning_rate: 0.001\n  global_batch_size: 4\n"
                                          "records_per_epoch: 40\nsearcher:\n  metric: validation_loss\n"
                                          "  max_length: {epochs: 3}\n";
  }
  int runs = 0;
  auto init = [&](std::vector<std::string> args) {  // each context its own run directory (one lock each)
    args.insert(args.end(), {"--run-dir", (dir / ("run" + std::to_string(runs++))).string()});
    return init_from_args(args, {.hparams = {{"learning_rate", 0.001}, {"global_batch_size", 4}}, .seed = 1});
  };
  {  // --max-length: known at construction, in batches; records become batches
    auto ctx = init({"--max-length", "batches=40"});
    CHECK(ctx.get_max_length().is_batches());
    CHECK(ctx.get_max_length_batches() == 40);
    auto by_records = init({"--max-length", "records=100"});
    CHECK(by_records.get_max_length_batches() == 25);
  }
  {  // the config: epochs × records_per_epoch / global batch size, at construction
    auto ctx = init({"--config", (dir / "epochs.yaml").string()});
    CHECK(ctx.get_max_length().is_epochs());
    CHECK(ctx.get_batches_per_epoch() == 10);
    CHECK(ctx.get_max_length_batches() == 30);
  }
  {  // only fit() gives it: an error that says where to give it, then known from on_training_start
    auto ctx = init({});
    const auto early = test_support::error_of<dtl::ConfigError>([&] { (void)ctx.get_max_length(); });
    CHECK(test_support::contains(early, "not known yet"));
    CHECK(test_support::contains(early, "--max-length"));
    const auto epoch = test_support::error_of<dtl::ConfigError>([&] { (void)ctx.get_batches_per_epoch(); });
    CHECK(test_support::contains(epoch, "records_per_epoch"));
    test::Record rec;
    auto seen = std::make_shared<LengthAtStart>(ctx);
    test::LinearTrial trial(ctx, rec, {.extra_callback = seen});  // 64 examples, batch 4: 16 per epoch
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Epoch{2}, .quiet = true});
    CHECK(seen->batches == 32);
    CHECK(ctx.get_max_length_batches() == 32);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("fit: a missing max_length and an empty training set are clear errors") {
  test::Record rec;
  auto ctx = dtl::init(test::init_options("errors"));
  test::LinearTrial trial(ctx, rec, {});
  CHECK_THROWS_WITH_AS(dtl::Trainer(trial, ctx).fit({}), doctest::Contains("max_length"), dtl::ConfigError);
  test::LinearTrial empty(ctx, rec, {.train_size = 0});
  CHECK_THROWS_WITH_AS(dtl::Trainer(empty, ctx).fit({.max_length = dtl::Batch{1}}), doctest::Contains("no batch"),
                       dtl::DataError);
  std::filesystem::remove_all(ctx.run_dir());
}
