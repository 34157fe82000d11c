#include "test_trials.hpp"

#include "../support/external.hpp"

#include <fstream>
#include <numeric>

using test::LinearTrial;
using test::Record;
using V = std::vector<std::int64_t>;

namespace {
Record run(dtl::FitOptions fit, LinearTrial::Options o = {}, std::int64_t gbs = 4, std::int64_t aggregation = 1) {
  Record rec;
  auto ctx = dtl::init(test::init_options("trainer", gbs, 0.001, aggregation));
  LinearTrial trial(ctx, rec, o);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit(std::move(fit));
  std::filesystem::remove_all(ctx.run_dir());
  return rec;
}
}  // namespace

TEST_CASE("T1: Determined's test_trainer_callbacks counts and positions") {
  // 64 examples, gbs 4: epoch_len 16; max 2 epochs, checkpoints every 5, validation every 10.
  auto r = run({.max_length = dtl::Epoch{2},
                .validation_period = dtl::Batch{10},
                .checkpoint_period = dtl::Batch{5},
                .checkpoint_policy = dtl::CheckpointPolicy::all});
  CHECK(r.validations == V{10, 20, 30, 32});
  CHECK(r.checkpoints == V{5, 10, 15, 20, 25, 30, 32});
  CHECK(r.workloads == V{5, 10, 15, 20, 25, 30, 32});
  CHECK(r.trial_startups == 1);
  CHECK(r.training_starts == 1);
  CHECK(r.epoch_starts == V{0, 1});
  CHECK(r.epoch_ends == V{0, 1});
  CHECK(r.shutdowns == 1);
}

TEST_CASE("T2: callbacks on a 64-batch run, epoch_len 32") {
  LinearTrial::Options o{.train_size = 128};
  dtl::FitOptions base{.max_length = dtl::Batch{64},
                       .reporting_period = dtl::Batch::never(),
                       .checkpoint_policy = dtl::CheckpointPolicy::all};
  SUBCASE("(a) no periods") {
    auto r = run(base, o);
    CHECK(r.workloads == V{64});
    CHECK(r.validations == V{64});
    CHECK(r.checkpoints == V{64});
  }
  SUBCASE("(b) validation every 32") {
    auto f = base;
    f.validation_period = dtl::Batch{32};
    auto r = run(f, o);
    CHECK(r.workloads == V{32, 64});
    CHECK(r.validations == V{32, 64});
    CHECK(r.checkpoints == V{32, 64});
  }
  SUBCASE("(c) checkpoint every 32") {
    auto f = base;
    f.checkpoint_period = dtl::Batch{32};
    auto r = run(f, o);
    CHECK(r.workloads == V{32, 64});
    CHECK(r.validations == V{64});
    CHECK(r.checkpoints == V{32, 64});
  }
}

TEST_CASE("T3: epoch-based validation and schedules") {
  SUBCASE("val = Epoch(1), max = Batch(25), epoch_len 10") {
    auto r = run({.max_length = dtl::Batch{25},
                  .validation_period = dtl::Epoch{1},
                  .checkpoint_policy = dtl::CheckpointPolicy::none},
                 {.train_size = 40});
    CHECK(r.validations == V{10, 20, 25});
    CHECK(r.epoch_starts.size() == 3);
    CHECK(r.epoch_ends.size() == 2);
  }
  SUBCASE("val = Batch([3, 7]), max = Batch(12), policy none") {
    auto r = run({.max_length = dtl::Batch{12},
                  .validation_period = dtl::Batch{{3, 7}},
                  .checkpoint_policy = dtl::CheckpointPolicy::none});
    CHECK(r.validations == V{3, 7, 12});
    CHECK(r.checkpoints == V{12});
  }
}

TEST_CASE("T4: a training report every reporting_period") {
  auto r = run({.max_length = dtl::Batch{100},
                .reporting_period = dtl::Batch{10},
                .checkpoint_policy = dtl::CheckpointPolicy::none},
               {.train_size = 400});
  CHECK(r.workloads == V{10, 20, 30, 40, 50, 60, 70, 80, 90, 100});
}

TEST_CASE("T5: test mode, stop requests, step-zero validation") {
  SUBCASE("test mode trains one batch, validates one batch, checkpoints once") {
    auto r = run({.max_length = dtl::Batch{100}, .test_mode = true});
    CHECK(r.batches == 1);
    CHECK(r.validations == V{1});
    CHECK(r.validation_batches == 1);
    CHECK(r.checkpoints == V{1});
  }
  SUBCASE("a stop requested at batch 30 checkpoints at 30 and skips further validation") {
    auto r = run({.max_length = dtl::Batch{100},
                  .validation_period = dtl::Batch{25},
                  .reporting_period = dtl::Batch{10},
                  .checkpoint_policy = dtl::CheckpointPolicy::none},
                 {.train_size = 400, .stop_at_30 = true});
    CHECK(r.batches == 30);
    CHECK(r.validations == V{25});
    CHECK(r.checkpoints == V{30});
  }
  SUBCASE("step-zero validation") {
    auto r = run({.max_length = dtl::Batch{20},
                  .validation_period = dtl::Batch{5},
                  .checkpoint_policy = dtl::CheckpointPolicy::none,
                  .step_zero_validation = true});
    CHECK(r.validations == V{0, 5, 10, 15, 20});
  }
}

TEST_CASE("T6: resuming with max_length <= batches done trains and validates nothing") {
  Record first, second;
  auto opts = test::init_options("t6");
  {
    auto ctx = dtl::init(opts);
    LinearTrial trial(ctx, first, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{10}, .checkpoint_policy = dtl::CheckpointPolicy::none});
  }
  REQUIRE(first.checkpoints == V{10});
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, second, {});
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{10},
            .latest_checkpoint = dtl::detail::Checkpointer(opts.run_dir.value() / "checkpoints").resolve("latest")});
  CHECK(second.batches == 0);
  CHECK(second.workloads.empty());
  CHECK(second.validations.empty());
  CHECK(trial.weight() == doctest::Approx(1.0 - std::pow(0.998, 10)).epsilon(1e-6));
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("T9: OneVar matches the analytic solution w_n = 1 - 0.998^n") {
  Record rec;
  auto ctx = dtl::init(test::init_options("onevar"));
  LinearTrial trial(ctx, rec, {.train_size = 64});
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{100},
            .reporting_period = dtl::Batch{10},
            .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(trial.weight() == doctest::Approx(0.181433).epsilon(1e-5));
  for (std::size_t n = 0; n < rec.weights.size(); ++n)
    CHECK(rec.weights[n] == doctest::Approx(1.0 - std::pow(0.998, static_cast<double>(n + 1))).epsilon(1e-5));
  REQUIRE(rec.workload_metrics.size() == 10);
  CHECK(rec.workload_metrics[0]["loss"].get<double>() == doctest::Approx(0.982208).epsilon(1e-5));
  CHECK(rec.workload_metrics[1]["loss"].get<double>() == doctest::Approx(0.943658).epsilon(1e-5));
  REQUIRE(rec.validation_metrics.size() == 1);
  CHECK(rec.validation_metrics[0]["validation_loss"].get<double>() == doctest::Approx(0.670052).epsilon(1e-5));
  for (std::size_t i = 1; i < rec.workload_metrics.size(); ++i)
    CHECK(rec.workload_metrics[i]["loss"].get<double>() <= rec.workload_metrics[i - 1]["loss"].get<double>());
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("T12: gradient aggregation averages aggregated gradients and steps every A batches") {
  auto r = run({.max_length = dtl::Batch{8},
                .validation_period = dtl::Batch{1},
                .checkpoint_policy = dtl::CheckpointPolicy::none},
               {.identity = true}, 4, 2);
  const double want[] = {0, 0.00375, 0.00375, 0.013064937, 0.013064937, 0.03034617, 0.03034617, 0.057719498};
  REQUIRE(r.weights.size() == 8);
  for (int i = 0; i < 8; ++i) CHECK(r.weights[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("LR auto-stepping positions (semantics §2.5 table)") {
  auto steps = [](std::int64_t a, std::int64_t f, std::int64_t l, dtl::StepMode m) {
    return run({.max_length = dtl::Batch{12}, .checkpoint_policy = dtl::CheckpointPolicy::none},
               {.train_size = 4 * l, .lr_mode = std::pair{m, f}}, 4, a)
        .lr_steps;
  };
  using M = dtl::StepMode;
  CHECK(steps(1, 1, 4, M::every_batch).size() == 12);
  CHECK(steps(1, 1, 4, M::every_optimizer_step).size() == 12);
  CHECK(steps(1, 1, 4, M::every_epoch) == V{3, 7, 11});
  CHECK(steps(2, 1, 4, M::every_batch) == V{1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11});
  CHECK(steps(2, 1, 4, M::every_optimizer_step) == V{1, 3, 5, 7, 9, 11});
  CHECK(steps(2, 1, 4, M::every_epoch) == V{3, 7, 11});
  CHECK(steps(2, 2, 4, M::every_batch).size() == 6);
  CHECK(steps(2, 2, 4, M::every_optimizer_step).size() == 6);
  CHECK(steps(2, 2, 4, M::every_epoch) == V{7});
  CHECK(steps(2, 1, 3, M::every_epoch) == V{1, 5, 7, 11});
  CHECK(steps(1, 1, 4, M::manual).empty());
}

namespace {
/// OneVar with evaluate_full_dataset instead of evaluate_batch.
class FullDatasetTrial : public dtl::PyTorchTrial<FullDatasetTrial> {
 public:
  explicit FullDatasetTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
    {
      torch::NoGradGuard g;
      model_->weight.zero_();
    }
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.001));
  }
  auto build_training_data_loader() { return dtl::DataLoader(test::ones(64), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(test::ones(10), {.batch_size = 4}); }
  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& b, std::int64_t, std::int64_t) {
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_full_dataset(dtl::DataLoader<dtl::TensorDataset<2>>& loader) {
    grad_enabled_during_validation = grad_enabled_during_validation || torch::GradMode::is_enabled();
    double sum = 0;
    std::int64_t n = 0, batches = 0;
    for (auto& [x, y] : loader.stream()) {
      sum += torch::mse_loss(model_(x), y, torch::Reduction::Sum).item<double>();
      n += x.size(0);
      ++batches;
    }
    ++calls;
    return {{"validation_loss", sum / static_cast<double>(n)}, {"batches", static_cast<double>(batches)}};
  }
  int calls = 0;
  bool grad_enabled_during_validation = false;

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};
}  // namespace

TEST_CASE("evaluate_full_dataset: runs under no-grad at each validation boundary on the whole set") {
  auto ctx = dtl::init(test::init_options("full"));
  FullDatasetTrial trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{100},
               .validation_period = dtl::Batch{50},
               .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(trial.calls == 2);  // at 50 and at 100
  CHECK_FALSE(trial.grad_enabled_during_validation);
  // The metrics reported are the trial's, unreduced: every example of the set, (1 - w_100)^2.
  std::ifstream jsonl(ctx.run_dir() / "metrics.jsonl");
  dtl::MetricsJson last;
  for (std::string line; std::getline(jsonl, line);)
    if (auto j = dtl::MetricsJson::parse(line); j["type"] == "validation") last = j;
  CHECK(last["steps_completed"] == 100);
  CHECK(last["metrics"]["validation_loss"].get<double>() == doctest::Approx(0.670052).epsilon(1e-5));
  CHECK(last["metrics"]["batches"].get<double>() == 3.0);  // ceil(10 / 4): the unsharded loader
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("a fit writes Determined's TensorBoard scalars: per-batch training, then validation") {
  Record rec;
  auto opts = test::init_options("tensorboard");
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{20}, .reporting_period = dtl::Batch{10}, .quiet = true});
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(ctx.get_tensorboard_path())) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().starts_with("events.out.tfevents."));
  if (::access(test_support::python().c_str(), X_OK) != 0) {
    MESSAGE(test_support::python() << " not found: the TensorBoard file's contents are not decoded");
  } else {
    test_support::Run run;
    std::vector<std::int64_t> loss_steps, val_steps;
    for (const auto& ev : test_support::decode_tfevents(files[0], &run)) {
      if (!ev.contains("tag")) continue;
      if (ev["tag"] == "Determined/loss") loss_steps.push_back(ev["step"]);
      // "validation_loss" starts with "val", so Determined adds no val_ prefix.
      if (ev["tag"] == "Determined/validation_loss") val_steps.push_back(ev["step"]);
    }
    CHECK_MESSAGE(run.status == 0, run.output);
    // One scalar per batch at steps 0..19 (Determined: steps_completed - len + i); validation at 20.
    std::vector<std::int64_t> expected(20);
    std::iota(expected.begin(), expected.end(), 0);
    CHECK(loss_steps == expected);
    CHECK(val_steps == V{20});
  }
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("save_trial_latest / save_trial_best: older checkpoints are deleted, the best and latest kept") {
  // Validation every 2 batches; a learning rate too large for the data makes the loss fall at first,
  // then diverge, so the best checkpoint is an early one.
  Record rec;
  auto opts = test::init_options("retention", 4, 0.09);
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, rec, {.identity = true});
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{12},
            .validation_period = dtl::Batch{2},
            .checkpoint_policy = dtl::CheckpointPolicy::all,
            .quiet = true,
            .save_trial_latest = 2,
            .save_trial_best = 1});
  REQUIRE(rec.checkpoints.size() == 6);  // one per validation: 2, 4, ..., 12
  // Which batches survive: read each remaining checkpoint's metadata.
  std::vector<std::int64_t> kept;
  std::vector<double> losses;
  for (const auto& m : rec.validation_metrics) losses.push_back(m["validation_loss"].get<double>());
  for (const auto& e : std::filesystem::directory_iterator(ctx.run_dir() / "checkpoints")) {
    if (!e.is_directory()) continue;
    std::ifstream in(e.path() / "metadata.json");
    nlohmann::json meta;
    in >> meta;
    kept.push_back(meta["steps_completed"].get<std::int64_t>());
  }
  std::sort(kept.begin(), kept.end());
  const auto best = 2 * (1 + std::distance(losses.begin(), std::min_element(losses.begin(), losses.end())));
  CAPTURE(losses);
  REQUIRE(best < 10);  // the setup did produce an early best
  CHECK(kept == V{best, 10, 12});
  // The latest pointer still resolves to a complete checkpoint.
  CHECK(std::filesystem::exists(dtl::detail::Checkpointer(ctx.run_dir() / "checkpoints").resolve("latest") /
                                "metadata.json"));
  std::filesystem::remove_all(opts.run_dir.value());
}

namespace {
/// What `f` prints to std::cout (restored on every exit).
template <class F>
std::string console_of(F&& f) {
  std::ostringstream console;
  struct Restore {
    std::streambuf* old;
    ~Restore() { std::cout.rdbuf(old); }
  } restore{std::cout.rdbuf(console.rdbuf())};
  f();
  return console.str();
}
}  // namespace

TEST_CASE("the console's percentage moves per batch for an Epoch length, not once per epoch") {
  // 2 epochs of 16 batches (64 examples, batches of 4), a report every 8 batches.
  const auto text = console_of([] {
    run({.max_length = dtl::Epoch{2},
         .reporting_period = dtl::Batch{8},
         .checkpoint_policy = dtl::CheckpointPolicy::none},
        {.train_size = 64});
  });
  INFO(text);
  CHECK(text.find("[train] batch 8 epoch 0 (25%)") != std::string::npos);  // was (0%) until the epoch ended
  CHECK(text.find("[train] batch 24 epoch 1 (75%)") != std::string::npos);
  CHECK(text.find("[train] batch 32 epoch 2 (100%)") != std::string::npos);
}

TEST_CASE("a run ends with a summary a user can act on: metric, checkpoints, commands") {
  Record rec;
  auto ctx = dtl::init(test::init_options("summary", 4, 0.001, 1));
  const auto text = console_of([&] {
    LinearTrial trial(ctx, rec, {.train_size = 64});
    dtl::Trainer(trial, ctx)
        .fit({.max_length = dtl::Batch{24},
              .validation_period = dtl::Batch{8},
              .checkpoint_policy = dtl::CheckpointPolicy::best});
  });
  INFO(text);
  CHECK(text.find("[dtl] finished: 24 batches (1 epochs); this run trained 24 in ") != std::string::npos);
  // The loss falls monotonically (T9's OneVar-like problem), so the best is the last.
  CHECK(text.find("[dtl] validation_loss: best ") != std::string::npos);
  CHECK(text.find(" at batch 24, last ") != std::string::npos);
  const auto latest = test::latest_checkpoint(ctx.run_dir()).string();
  CHECK(text.find("checkpoints: latest " + latest + " (batch 24); best " + latest + " (batch 24)") !=
        std::string::npos);
  CHECK(text.find("--run-dir " + ctx.run_dir().string() + " --resume latest") != std::string::npos);
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("cuda_graphs: what a replay would get wrong is refused at fit's start; on the CPU the run stays eager") {
  // On the CPU there are no CUDA graphs: a note, then the very numbers of a run without them.
  std::vector<nlohmann::json> training[2], validation[2];
  double weight[2] = {0, 0};
  std::string text;
  for (int g = 0; g < 2; ++g) {
    Record rec;
    auto ctx = dtl::init(test::init_options(g ? "graphs-cpu" : "graphs-cpu-plain", 4, 0.01));
    const auto out = console_of([&] {
      LinearTrial trial(ctx, rec, {.train_size = 40, .identity = true});
      dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{12},
                                    .validation_period = dtl::Batch{6},
                                    .reporting_period = dtl::Batch{4},
                                    .cuda_graphs = g == 1});
      weight[g] = trial.weight();
    });
    if (g) text = out;
    training[g] = test::records(ctx.run_dir(), "training");
    validation[g] = test::records(ctx.run_dir(), "validation");
    std::filesystem::remove_all(ctx.run_dir());
  }
  INFO(text);
  CHECK(text.find("cuda_graphs: the trial trains on cpu, where there are no CUDA graphs: every batch runs eagerly") !=
        std::string::npos);
  CHECK(weight[0] == weight[1]);
  CHECK(training[0] == training[1]);
  CHECK(validation[0] == validation[1]);

  // Refused on every device, before the first batch, each in one line that names the fix.
  auto refused = [](dtl::InitOptions o, auto&& setup, dtl::FitOptions fit, const std::string& what) {
    Record rec;
    auto ctx = dtl::init(std::move(o));
    LinearTrial trial(ctx, rec, {.train_size = 16});
    setup(ctx);
    fit.max_length = dtl::Batch{4};
    fit.quiet = true;
    fit.cuda_graphs = true;
    CAPTURE(what);
    try {
      dtl::Trainer(trial, ctx).fit(fit);
      FAIL("not refused");
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find(what) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
    CHECK(rec.batches == 0);
    std::filesystem::remove_all(ctx.run_dir());
  };
  auto nothing = [](dtl::PyTorchTrialContext&) {};
  refused(test::init_options("graphs-aggregation", 4, 0.01, 2), nothing, {}, "aggregation_frequency is 2");
  refused(test::init_options("graphs-warmup"), nothing, {.cuda_graph_warmup = 0}, "must be at least 1");
#if DTL_TORCH_2  // on 1.13 no optimizer has a capturable step, and dtl has no CUDA build
  refused(
      test::init_options("graphs-rmsprop"),
      [](dtl::PyTorchTrialContext& ctx) {
        auto extra = ctx.wrap_model(torch::nn::Linear(1, 1));
        ctx.wrap_optimizer(torch::optim::RMSprop(extra->parameters()));
      },
      {}, "keeps its step count on the host");
  refused(
      test::init_options("graphs-foreach"),
      [](dtl::PyTorchTrialContext& ctx) {
        auto extra = ctx.wrap_model(torch::nn::Linear(1, 1));
        ctx.wrap_optimizer(torch::optim::SGD(extra->parameters(), 0.1), {.foreach = true});
      },
      {}, "leave foreach unset");
#endif
}

namespace {

// A trial that forgets wrap_model, or whose optimizer updates a module it never wrapped.
class UnwrappedTrial : public dtl::PyTorchTrial<UnwrappedTrial> {
 public:
  enum class Mistake { no_model, stray_optimizer };
  UnwrappedTrial(dtl::PyTorchTrialContext& ctx, Mistake m, Record& rec) : ctx_(ctx), rec_(rec) {
    model_ = torch::nn::Linear(1, 1);
    torch::nn::Linear head(1, 1);
    if (m == Mistake::stray_optimizer) model_ = ctx.wrap_model(model_);
    std::vector<torch::Tensor> params = model_->parameters();
    if (m == Mistake::stray_optimizer)
      for (const auto& p : head->parameters()) params.push_back(p);  // head: never wrapped
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(params, 0.1));
  }
  auto build_training_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& b, std::int64_t, std::int64_t) {
    ++rec_.batches;
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& b, std::int64_t) {
    return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}};
  }

 private:
  static dtl::TensorDataset<2> data() { return dtl::TensorDataset(torch::ones({8, 1}), torch::ones({8, 1})); }
  dtl::PyTorchTrialContext& ctx_;
  Record& rec_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

}  // namespace

TEST_CASE("a trial that wrapped no model, or an optimizer of parameters no wrapped model holds, stops before the first batch") {
  // Before, both trained, validated in training mode and checkpointed without the weights: a
  // "resume" then started from fresh ones, without a word.
  for (const auto mistake : {UnwrappedTrial::Mistake::no_model, UnwrappedTrial::Mistake::stray_optimizer}) {
    Record rec;
    auto ctx = dtl::init(test::init_options("unwrapped"));
    UnwrappedTrial trial(ctx, mistake, rec);
    std::string what;
    try {
      dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{4}, .quiet = true});
    } catch (const dtl::InvalidExperimentException& e) {
      what = e.what();
    }
    INFO(what);
    if (mistake == UnwrappedTrial::Mistake::no_model)
      CHECK(what.find("the trial wrapped no model") != std::string::npos);
    else
      CHECK(what.find("optimizer 0 updates 2 parameter tensors that no wrapped model holds") != std::string::npos);
    CHECK(what.find("ctx.wrap_model") != std::string::npos);
    CHECK(rec.batches == 0);
    CHECK_FALSE(std::filesystem::exists(ctx.run_dir() / "checkpoints"));
    std::filesystem::remove_all(ctx.run_dir());
  }
}

TEST_CASE("the config's scheduling_unit, and --scheduling-unit over it, set the reporting period") {
  for (const bool flag : {false, true}) {
    Record rec;
    const auto dir = test::temp_run_dir(flag ? "sched-flag" : "sched-config");
    std::filesystem::create_directories(dir);
    {
      std::ofstream(dir / "exp.yaml") << "scheduling_unit: 3\n";
    }
    auto o = test::init_options(flag ? "sched-flag-run" : "sched-config-run");
    o.config = dir / "exp.yaml";
    std::vector<const char*> argv{"./trial", "--scheduling-unit", "5"};
    auto ctx = flag ? dtl::init(static_cast<int>(argv.size()), argv.data(), o) : dtl::init(o);
    LinearTrial trial(ctx, rec, {.train_size = 64});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{15}, .quiet = true});  // code: every 100
    std::vector<std::int64_t> at;
    for (const auto& r : test::records(ctx.run_dir(), "training")) at.push_back(r["steps_completed"].get<std::int64_t>());
    CHECK(at == (flag ? V{5, 10, 15} : V{3, 6, 9, 12, 15}));
    std::filesystem::remove_all(ctx.run_dir());
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("an exception from train_batch is named with the hook and the batch before it leaves fit, unchanged") {
  Record rec;
  auto ctx = dtl::init(test::init_options("throws-at"));
  LinearTrial trial(ctx, rec, {.throw_at_batch = 6});
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  std::string what;
  try {
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{20}, .quiet = true});
  } catch (const std::runtime_error& e) {  // the trial's own exception, its type kept
    what = e.what();
  }
  std::cerr.rdbuf(old);
  CHECK(what == "train_batch failed on purpose");
  CHECK(err.str().find("dtl: train_batch threw at batch 6 (epoch 0): train_batch failed on purpose") !=
        std::string::npos);
  std::filesystem::remove_all(ctx.run_dir());
}
