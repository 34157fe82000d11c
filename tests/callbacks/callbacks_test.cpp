#include "../core/test_trials.hpp"

// The shipped callbacks (include/dtl/callbacks.hpp): EarlyStopping, ReduceLROnPlateau and its
// callback, LearningRateMonitor. Each is run through the real Trainer; ReduceLROnPlateau is
// also compared with torch's own implementation (tests/callbacks/reduce_lr_on_plateau_reference.py,
// run with /usr/bin/python3) and with sequences recorded from it.
//
// Everything is in a named namespace: this file is compiled in a unity file with others.

#include <dtl/callbacks.hpp>

#include "../support/external.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace dtl_callbacks_test {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Steps = std::vector<std::int64_t>;

// ---- a trial whose validation loss is scripted --------------------------------------------

/// Linear(1, 1) trained on ones, with two optimizers: `opt0` over two param groups (weight at
/// lr, bias at lr / 10) and `opt1` over a second model at 0.01. Validation is one batch whose
/// `validation_loss` is the next value of `losses` (from `first_loss` on), so a test decides
/// what every validation reports.
class ScriptedTrial : public dtl::PyTorchTrial<ScriptedTrial> {
 public:
  struct Options {
    std::vector<double> losses;
    std::size_t first_loss = 0;
    std::int64_t train_size = 400;
    double lr = 0.1;
    std::optional<double> step_lr_gamma;  ///< StepLR(opt0, 1, gamma) every epoch
  };

  ScriptedTrial(dtl::PyTorchTrialContext& ctx, test::Record& rec, Options o)
      : ctx_(ctx), rec_(rec), o_(std::move(o)), next_loss_(o_.first_loss) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    other_ = ctx.wrap_model(torch::nn::Linear(torch::nn::LinearOptions(1, 1).bias(false)));
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{model_->weight}, std::make_unique<torch::optim::SGDOptions>(o_.lr));
    groups.emplace_back(std::vector<torch::Tensor>{model_->bias},
                        std::make_unique<torch::optim::SGDOptions>(o_.lr / 10));
    opt0 = ctx.wrap_optimizer(torch::optim::SGD(std::move(groups), torch::optim::SGDOptions(o_.lr)));
    opt1 = ctx.wrap_optimizer(torch::optim::SGD(other_->parameters(), 0.01));
    if (o_.step_lr_gamma)
      ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt0, 1, *o_.step_lr_gamma), dtl::StepMode::every_epoch);
  }

  auto build_training_data_loader() { return dtl::DataLoader(test::ones(o_.train_size), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(test::ones(4), {.batch_size = 4}); }
  dtl::Callbacks build_callbacks() {
    auto all = callbacks;
    all.emplace_back("recorder", std::make_shared<test::RecordingCallback>(rec_));
    return all;
  }

  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t, std::int64_t batch_idx) {
    auto& [x, y] = batch;
    auto loss = torch::mse_loss(model_(x), y) + torch::mse_loss(other_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt0);
    ctx_.step_optimizer(opt1);
    rec_.batches = batch_idx + 1;  // counted over the whole trial, so a resumed run's record reads the same
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>&, std::int64_t) {
    REQUIRE_MESSAGE(next_loss_ < o_.losses.size(), "the test scripted too few validation losses");
    return {{"validation_loss", o_.losses[next_loss_++]}};
  }

  dtl::Callbacks callbacks;  ///< run before the recorder
  std::shared_ptr<torch::optim::SGD> opt0, opt1;

 private:
  dtl::PyTorchTrialContext& ctx_;
  test::Record& rec_;
  Options o_;
  std::size_t next_loss_;
  torch::nn::Linear model_{nullptr}, other_{nullptr};
};

/// The learning rates of an optimizer's groups after every validation.
class LrAfterValidation : public dtl::PyTorchCallback {
 public:
  explicit LrAfterValidation(std::shared_ptr<torch::optim::Optimizer> opt) : opt_(std::move(opt)) {}
  void on_validation_end(const dtl::MetricsJson&) override {
    std::vector<double> lrs;
    for (const auto& g : opt_->param_groups()) lrs.push_back(g.options().get_lr());
    seen.push_back(std::move(lrs));
  }
  std::vector<std::vector<double>> seen;

 private:
  std::shared_ptr<torch::optim::Optimizer> opt_;
};

dtl::MetricsJson metrics_with(const std::string& name, double value) {
  dtl::MetricsJson m = dtl::MetricsJson::object();
  m["loss_like"] = 1.0;
  m[name] = value;
  return m;
}

// ---- Python -------------------------------------------------------------------------------

using test_support::python;
using test_support::python_torch_missing;
using test_support::run_command;
using test_support::shell_quote;
using test_support::test_file;

// ---- ReduceLROnPlateau cases ----------------------------------------------------------------

const std::vector<double> plateau_metrics = {1.0,  0.9,  0.9,  0.95, 0.9,    0.89995, 0.91, 0.8,  0.8,  0.8,
                                             0.8,  0.8,  0.8,  0.81, 0.7999, 0.79,    0.85, 0.85, 0.85, 0.85,
                                             0.85, 0.85, 0.85, 0.85, 0.85,   0.85,    0.85, 0.85, 0.85, 0.85};

/// A case in Python's terms: the groups' initial lrs and ReduceLROnPlateau's keyword arguments.
struct PlateauCase {
  std::string name;
  std::vector<double> lrs;
  json kwargs;
};

const std::vector<PlateauCase>& plateau_cases() {
  static const std::vector<PlateauCase> cases = {
      {"defaults", {0.1}, json::object()},
      {"patience 2", {0.1}, {{"patience", 2}}},
      {"max, abs threshold, cooldown",
       {0.1},
       {{"mode", "max"},
        {"factor", 0.5},
        {"patience", 1},
        {"threshold", 0.01},
        {"threshold_mode", "abs"},
        {"cooldown", 2}}},
      {"per-group floors, cooldown",
       {0.1, 0.01},
       {{"factor", 0.5},
        {"patience", 0},
        {"cooldown", 1},
        {"threshold", 0.05},
        {"threshold_mode", "abs"},
        {"min_lr", {0.02, 0.001}}}},
      {"scalar floor and eps", {0.1, 0.01}, {{"factor", 0.3}, {"patience", 1}, {"min_lr", 0.009}, {"eps", 0.0015}}},
      {"max, rel threshold", {1.0}, {{"mode", "max"}, {"threshold", 0.1}, {"patience", 3}, {"factor", 0.7}}},
  };
  return cases;
}

/// Python's keyword arguments as dtl's options (one source for both sides of the comparison).
dtl::lr::ReduceLROnPlateauOptions options_from(const json& kw) {
  dtl::lr::ReduceLROnPlateauOptions o;
  if (kw.contains("mode")) o.mode = dtl::parse_monitor_mode(kw["mode"].get<std::string>());
  if (kw.contains("factor")) o.factor = kw["factor"];
  if (kw.contains("patience")) o.patience = kw["patience"];
  if (kw.contains("threshold")) o.threshold = kw["threshold"];
  if (kw.contains("threshold_mode"))
    o.threshold_mode = dtl::lr::parse_threshold_mode(kw["threshold_mode"].get<std::string>());
  if (kw.contains("cooldown")) o.cooldown = kw["cooldown"];
  if (kw.contains("min_lr"))
    o.min_lr = kw["min_lr"].is_array() ? dtl::lr::MinLR(kw["min_lr"].get<std::vector<double>>())
                                       : dtl::lr::MinLR(kw["min_lr"].get<double>());
  if (kw.contains("eps")) o.eps = kw["eps"];
  return o;
}

std::shared_ptr<torch::optim::SGD> sgd_with_groups(const std::vector<double>& lrs) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs)
    groups.emplace_back(std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())},
                        std::make_unique<torch::optim::SGDOptions>(lr));
  return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(lrs.front()));
}

struct PlateauRun {
  std::vector<std::vector<double>> lrs;  ///< after each step
  json state;
};

PlateauRun run_dtl(const PlateauCase& c, const std::vector<double>& metrics) {
  auto opt = sgd_with_groups(c.lrs);
  dtl::lr::ReduceLROnPlateau sched(opt, options_from(c.kwargs));
  PlateauRun r;
  for (double m : metrics) {
    sched.step(m);
    r.lrs.push_back(sched.get_last_lr());
  }
  r.state = json::parse(sched.state_dict().dump());  // through text, as a checkpoint would
  return r;
}

PlateauRun run_python(const PlateauCase& c, const std::vector<double>& metrics) {
  const json arg = {{"lrs", c.lrs}, {"metrics", metrics}, {"options", c.kwargs}};
  const auto script = test_file("callbacks/reduce_lr_on_plateau_reference.py");
  auto out = run_command(python() + " " + shell_quote(script.string()) + " " + shell_quote(arg.dump()));
  REQUIRE_MESSAGE(out.status == 0, out.output);
  auto j = json::parse(out.output);
  return {j.at("lrs").get<std::vector<std::vector<double>>>(), j.at("state")};
}

/// Recorded from torch 1.13 (python3-torch) with plateau_metrics: group 0's lr after each step.
const std::vector<double> recorded_patience_2 = {0.1,
                                                 0.1,
                                                 0.1,
                                                 0.1,
                                                 0.010000000000000002,
                                                 0.010000000000000002,
                                                 0.010000000000000002,
                                                 0.010000000000000002,
                                                 0.010000000000000002,
                                                 0.010000000000000002,
                                                 0.0010000000000000002,
                                                 0.0010000000000000002,
                                                 0.0010000000000000002,
                                                 0.00010000000000000003,
                                                 0.00010000000000000003,
                                                 0.00010000000000000003,
                                                 0.00010000000000000003,
                                                 0.00010000000000000003,
                                                 1.0000000000000004e-05,
                                                 1.0000000000000004e-05,
                                                 1.0000000000000004e-05,
                                                 1.0000000000000004e-06,
                                                 1.0000000000000004e-06,
                                                 1.0000000000000004e-06,
                                                 1.0000000000000005e-07,
                                                 1.0000000000000005e-07,
                                                 1.0000000000000005e-07,
                                                 1.0000000000000005e-08,
                                                 1.0000000000000005e-08,
                                                 1.0000000000000005e-08};
const std::vector<double> recorded_max_rel = {1.0,
                                              1.0,
                                              1.0,
                                              1.0,
                                              0.7,
                                              0.7,
                                              0.7,
                                              0.7,
                                              0.48999999999999994,
                                              0.48999999999999994,
                                              0.48999999999999994,
                                              0.48999999999999994,
                                              0.3429999999999999,
                                              0.3429999999999999,
                                              0.3429999999999999,
                                              0.3429999999999999,
                                              0.24009999999999992,
                                              0.24009999999999992,
                                              0.24009999999999992,
                                              0.24009999999999992,
                                              0.16806999999999994,
                                              0.16806999999999994,
                                              0.16806999999999994,
                                              0.16806999999999994,
                                              0.11764899999999995,
                                              0.11764899999999995,
                                              0.11764899999999995,
                                              0.11764899999999995,
                                              0.08235429999999996,
                                              0.08235429999999996};
/// "per-group floors, cooldown": both groups.
const std::vector<std::vector<double>> recorded_floors = {
    {0.1, 0.01},     {0.1, 0.01},     {0.05, 0.005}, {0.05, 0.005}, {0.025, 0.0025}, {0.025, 0.0025},
    {0.02, 0.00125}, {0.02, 0.00125}, {0.02, 0.001}, {0.02, 0.001}, {0.02, 0.001},   {0.02, 0.001},
    {0.02, 0.001},   {0.02, 0.001},   {0.02, 0.001}, {0.02, 0.001}, {0.02, 0.001},   {0.02, 0.001},
    {0.02, 0.001},   {0.02, 0.001},   {0.02, 0.001}, {0.02, 0.001}, {0.02, 0.001},   {0.02, 0.001},
    {0.02, 0.001},   {0.02, 0.001},   {0.02, 0.001}, {0.02, 0.001}, {0.02, 0.001},   {0.02, 0.001}};

const PlateauCase& plateau_case(const std::string& name) {
  for (const auto& c : plateau_cases())
    if (c.name == name) return c;
  FAIL("no plateau case " << name);
  throw std::logic_error("unreachable");
}

std::vector<double> group0(const std::vector<std::vector<double>>& lrs) {
  std::vector<double> out;
  for (const auto& l : lrs) out.push_back(l.at(0));
  return out;
}

// ---- ReduceLROnPlateau -----------------------------------------------------------------------

TEST_CASE("ReduceLROnPlateau: torch 1.13's sequences, recorded") {
  CHECK(group0(run_dtl(plateau_case("patience 2"), plateau_metrics).lrs) == recorded_patience_2);
  CHECK(group0(run_dtl(plateau_case("max, rel threshold"), plateau_metrics).lrs) == recorded_max_rel);
  CHECK(run_dtl(plateau_case("per-group floors, cooldown"), plateau_metrics).lrs == recorded_floors);
}

TEST_CASE("ReduceLROnPlateau: equals torch's ReduceLROnPlateau run by /usr/bin/python3") {
  if (auto why = python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  for (const auto& c : plateau_cases()) {
    CAPTURE(c.name);
    const auto want = run_python(c, plateau_metrics);
    const auto got = run_dtl(c, plateau_metrics);
    CHECK(got.lrs == want.lrs);  // bit for bit: Python's json writes shortest round-trip floats
    // The state_dict has Python's keys and values (non-finite values as "inf" on both sides).
    CHECK(got.state == want.state);
    for (auto it = want.state.begin(); it != want.state.end(); ++it) {
      CAPTURE(it.key());
      CHECK(got.state.contains(it.key()));
    }
  }
}

TEST_CASE("ReduceLROnPlateau: state_dict before a step, round trip, and errors") {
  const auto& c = plateau_case("max, abs threshold, cooldown");
  auto opt = sgd_with_groups(c.lrs);
  dtl::lr::ReduceLROnPlateau fresh(opt, options_from(c.kwargs));
  auto s0 = json::parse(fresh.state_dict().dump());
  CHECK(s0["best"] == "-inf");
  CHECK(s0["mode_worse"] == "-inf");
  if (dtl::detail::compat::plateau_last_lr_from_start) {  // torch 2.x: the initial learning rates
    CHECK(s0["_last_lr"] == json(c.lrs));
    CHECK(fresh.get_last_lr() == c.lrs);
  } else {  // torch 1.13: no _last_lr before the first step
    CHECK_FALSE(s0.contains("_last_lr"));
    CHECK(fresh.get_last_lr().empty());
  }
  if (!python_torch_missing()) {
    auto py = run_python(c, {});
    CHECK(s0 == py.state);
  }

  SUBCASE("in a checkpoint, inf is a Python float: torch loads the state and steps (a str raised TypeError)") {
    const auto iv = dtl::detail::json_to_ivalue(fresh.state_dict());
    const auto d = iv.toGenericDict();
    REQUIRE(d.at("best").isDouble());
    CHECK(d.at("best").toDouble() == -std::numeric_limits<double>::infinity());
    CHECK(d.at("mode_worse").isDouble());
    CHECK(dtl::detail::ivalue_to_json(iv) == fresh.state_dict());  // and back to dtl's spelling
    if (!python_torch_missing()) {
      const auto dir = std::filesystem::temp_directory_path() / ("dtl_plateau_" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      dtl::detail::save_pickle_archive(iv, dir / "plateau.pt");
      const std::string py =
          "import torch\n"
          "p = torch.nn.Parameter(torch.zeros(1))\n"
          "s = torch.optim.lr_scheduler.ReduceLROnPlateau(torch.optim.SGD([p], lr=0.1))\n"
          // torch 1.13's weights_only loader refuses every float (docs/differences.md)
          "safe = {'weights_only': True} if int(torch.__version__.split('.')[0]) >= 2 else {}\n"
          "s.load_state_dict(torch.load('" + (dir / "plateau.pt").string() + "', **safe))\n"
          "s.step(2.5)\n"
          "print(type(s.best).__name__, s.best)\n";
      const auto out = run_command(python() + " -c " + shell_quote(py));
      std::filesystem::remove_all(dir);
      INFO(out.output);
      CHECK(out.status == 0);
      CHECK(out.output.find("float 2.5") != std::string::npos);  // mode max: 2.5 beats -inf
    }
  }
  SUBCASE("stopping half way and loading the state continues exactly") {
    const std::size_t half = 13;
    const auto whole = run_dtl(c, plateau_metrics);
    auto opt_a = sgd_with_groups(c.lrs);
    dtl::lr::ReduceLROnPlateau a(opt_a, options_from(c.kwargs));
    for (std::size_t i = 0; i < half; ++i) a.step(plateau_metrics[i]);
    const auto saved = a.state_dict().dump();
    // A new process: a fresh optimizer whose lr a checkpoint restored, and a scheduler built
    // with the default options, which the state then overrides.
    auto opt_b = sgd_with_groups(c.lrs);
    opt_b->param_groups()[0].options().set_lr(a.get_last_lr()[0]);
    dtl::lr::ReduceLROnPlateau b(opt_b);
    b.load_state_dict(json::parse(saved));
    CHECK(b.mode() == dtl::lr::Mode::max);
    CHECK(b.last_epoch() == static_cast<std::int64_t>(half));
    for (std::size_t i = half; i < plateau_metrics.size(); ++i) {
      b.step(plateau_metrics[i]);
      CHECK(b.get_last_lr() == whole.lrs[i]);
    }
    CHECK(json::parse(b.state_dict().dump()) == whole.state);
  }
  SUBCASE("a tensor metric steps like its value") {
    auto o1 = sgd_with_groups({0.1});
    auto o2 = sgd_with_groups({0.1});
    dtl::lr::ReduceLROnPlateau a(o1, {.patience = 0}), b(o2, {.patience = 0});
    for (double m : {1.0, 2.0, 0.5, 0.7}) {
      a.step(m);
      b.step(torch::tensor(m));
    }
    CHECK(a.get_last_lr() == b.get_last_lr());
    CHECK(a.best() == 0.5);
  }
  SUBCASE("Python's ValueErrors, with what to change") {
    auto o2 = sgd_with_groups({0.1, 0.01});
    CHECK_THROWS_WITH_AS(dtl::lr::ReduceLROnPlateau(o2, {.factor = 1.0}), doctest::Contains("factor should be < 1.0"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(dtl::lr::ReduceLROnPlateau(o2, {.min_lr = {0.1, 0.2, 0.3}}),
                         doctest::Contains("expected 2 min_lrs, got 3"), std::invalid_argument);
    dtl::lr::ReduceLROnPlateau ok(o2, {.min_lr = {0.001, 0.0001}});
    CHECK(ok.min_lrs() == std::vector<double>{0.001, 0.0001});
    CHECK(dtl::lr::ReduceLROnPlateau(o2, {.min_lr = 0.5}).min_lrs() == std::vector<double>{0.5, 0.5});
    CHECK_THROWS_WITH_AS(ok.load_state_dict({{"mode", "minimum"}}), doctest::Contains("use \"min\" or \"max\""),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ok.load_state_dict({{"threshold_mode", "relative"}}), doctest::Contains("\"rel\" or \"abs\""),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ok.load_state_dict({{"min_lrs", {0.1}}}),
                         doctest::Contains("1 min_lrs but the optimizer has 2"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ok.load_state_dict({{"best", "lots"}}), doctest::Contains("'best'"), std::invalid_argument);
  }
}

TEST_CASE("ReduceLROnPlateauEveryValidation: steps after each validation of a real Trainer run") {
  const auto& c = plateau_case("per-group floors, cooldown");  // two groups, as opt0 has
  test::Record rec;
  auto ctx = dtl::init(test::init_options("plateau"));
  ScriptedTrial trial(ctx, rec, {.losses = plateau_metrics, .lr = 0.1});
  auto plateau = std::make_shared<dtl::callbacks::ReduceLROnPlateauEveryValidation>(trial.opt0, "validation_loss",
                                                                                    options_from(c.kwargs));
  auto seen = std::make_shared<LrAfterValidation>(trial.opt0);
  trial.callbacks = {{"reduce_lr", plateau}, {"lrs", seen}};
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{24},
            .validation_period = dtl::Batch{2},
            .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(rec.validations == Steps{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24});
  const auto standalone = run_dtl(c, std::vector<double>(plateau_metrics.begin(), plateau_metrics.begin() + 12));
  CHECK(seen->seen == standalone.lrs);
  CHECK(seen->seen == std::vector<std::vector<double>>(recorded_floors.begin(), recorded_floors.begin() + 12));
  CHECK(json::parse(plateau->state_dict().dump()) == standalone.state);
  CHECK(plateau->scheduler()->last_epoch() == 12);
  CHECK(trial.opt1->param_groups()[0].options().get_lr() == 0.01);  // only the given optimizer

  // load_state_dict hands the state to the scheduler.
  auto other = dtl::callbacks::ReduceLROnPlateauEveryValidation(sgd_with_groups({0.1, 0.01}));
  other.load_state_dict(plateau->state_dict());
  CHECK(other.scheduler()->num_bad_epochs() == plateau->scheduler()->num_bad_epochs());
  CHECK(other.scheduler()->best() == plateau->scheduler()->best());
  CHECK(other.monitor() == "validation_loss");
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("ReduceLROnPlateauEveryValidation: a missing or non-numeric metric names what validation reported") {
  auto cb = dtl::callbacks::ReduceLROnPlateauEveryValidation(sgd_with_groups({0.1}), "val_accuracy");
  CHECK_THROWS_WITH_AS(cb.on_validation_end(metrics_with("validation_loss", 0.5)),
                       "dtl: ReduceLROnPlateauEveryValidation monitors 'val_accuracy', but validation reported no "
                       "metric of that name (it reported: 'loss_like', 'validation_loss'); set the callback's "
                       "monitor to one of them",
                       dtl::InvalidExperimentException);

  dtl::MetricsJson vec = dtl::MetricsJson::object();
  vec["val_accuracy"] = {0.5, 0.7};  // what evaluate_full_dataset can report
  CHECK_THROWS_WITH_AS(
      cb.on_validation_end(vec),
      doctest::Contains("monitors 'val_accuracy', but validation reported it as [0.5,0.7], not a number"),
      dtl::InvalidExperimentException);

  // Through the Trainer: the exception ends fit.
  test::Record rec;
  auto ctx = dtl::init(test::init_options("plateau-missing"));
  ScriptedTrial trial(ctx, rec, {.losses = {1.0}});
  trial.callbacks = {
      {"reduce_lr", std::make_shared<dtl::callbacks::ReduceLROnPlateauEveryValidation>(trial.opt0, "val_accuracy")}};
  CHECK_THROWS_WITH_AS(dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{2}}),
                       doctest::Contains("monitors 'val_accuracy', but validation reported no metric of that name "
                                         "(it reported: 'validation_loss')"),
                       dtl::InvalidExperimentException);
  std::filesystem::remove_all(ctx.run_dir());
}

// ---- EarlyStopping ---------------------------------------------------------------------------

TEST_CASE("EarlyStopping: stops the Trainer after patience validations without improvement") {
  test::Record rec;
  auto ctx = dtl::init(test::init_options("early-stop"));
  // best 1.0, 0.8; then 0.85 (1), 0.8 (2: equal is no improvement), 0.9 (3) -> stop at batch 25.
  ScriptedTrial trial(ctx, rec, {.losses = {1.0, 0.8, 0.85, 0.8, 0.9, 0.1, 0.1}});
  auto es = std::make_shared<dtl::callbacks::EarlyStopping>(ctx, dtl::callbacks::EarlyStopping::Options{.patience = 3});
  trial.callbacks = {{"early_stopping", es}};
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{100},
               .validation_period = dtl::Batch{5},
               .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(rec.batches == 25);
  CHECK(rec.validations == Steps{5, 10, 15, 20, 25});
  CHECK(rec.checkpoints == Steps{25});  // the Trainer checkpoints at the stop
  CHECK(ctx.get_stop_requested());
  CHECK(es->stopped());
  CHECK(es->wait_count() == 3);
  CHECK(es->best_score() == 0.8);
  CHECK(es->stop_reason() == "'validation_loss' did not improve in the last 3 validations (best 0.8)");
  const auto latest = dtl::detail::Checkpointer(ctx.run_dir() / "checkpoints").resolve("latest");
  const auto metadata = json::parse(std::ifstream(latest / "metadata.json"));
  CHECK(metadata["steps_completed"] == 25);
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("EarlyStopping: a resumed run keeps the wait count") {
  auto opts = test::init_options("early-resume");
  std::string saved;
  {
    // 1.0 best, 1.1 (1), 1.2 (2): max_length is reached first, with a checkpoint at 15.
    test::Record rec;
    auto ctx = dtl::init(opts);
    ScriptedTrial trial(ctx, rec, {.losses = {1.0, 1.1, 1.2}});
    auto es = std::make_shared<dtl::callbacks::EarlyStopping>(ctx);
    trial.callbacks = {{"early_stopping", es}};
    dtl::Trainer(trial, ctx)
        .fit({.max_length = dtl::Batch{15},
              .validation_period = dtl::Batch{5},
              .checkpoint_policy = dtl::CheckpointPolicy::none});
    REQUIRE(rec.checkpoints == Steps{15});
    CHECK_FALSE(es->stopped());
    CHECK(es->wait_count() == 2);
    saved = es->state_dict().dump();
  }
  CHECK(
      json::parse(saved) ==
      json{
          {"monitor", "validation_loss"}, {"mode", "min"}, {"best_score", 1.0}, {"wait_count", 2}, {"stopped", false}});
  const auto checkpoint = dtl::detail::Checkpointer(opts.run_dir.value() / "checkpoints").resolve("latest");

  // The checkpoint holds the callback's state under its build_callbacks() name.
  const auto root = dtl::detail::load_pickle_archive(checkpoint / "state_dict.pth").toGenericDict();
  REQUIRE(root.contains("callbacks"));
  CHECK(dtl::detail::ivalue_to_json(root.at("callbacks").toGenericDict().at("early_stopping")) == json::parse(saved));

  // A new process resumes from the checkpoint alone; the wait count continues.
  test::Record rec;
  auto ctx = dtl::init(opts);
  // The next validation (1.3, at batch 20) is the third without improvement.
  ScriptedTrial trial(ctx, rec, {.losses = {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7}, .first_loss = 3});
  auto es = std::make_shared<dtl::callbacks::EarlyStopping>(ctx);
  trial.callbacks = {{"early_stopping", es}};
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{100},
            .validation_period = dtl::Batch{5},
            .checkpoint_policy = dtl::CheckpointPolicy::none,
            .latest_checkpoint = checkpoint});
  CHECK(rec.validations == Steps{20});
  CHECK(es->stopped());
  CHECK(es->best_score() == 1.0);
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("EarlyStopping: Lightning's rules, one validation at a time") {
  auto ctx = dtl::init(test::init_options("early-rules"));
  using Options = dtl::callbacks::EarlyStopping::Options;
  auto feed = [&](dtl::callbacks::EarlyStopping& es, std::initializer_list<double> values) {
    for (double v : values) es.on_validation_end(metrics_with(es.options().monitor, v));
  };
  SUBCASE("min_delta: a change of min_delta or less is no improvement") {
    dtl::callbacks::EarlyStopping es(ctx, Options{.min_delta = 0.1, .patience = 2});
    feed(es, {1.0, 0.95});
    CHECK(es.wait_count() == 1);
    feed(es, {0.85});  // 1.0 - 0.85 > 0.1
    CHECK(es.wait_count() == 0);
    CHECK(es.best_score() == 0.85);
    feed(es, {0.75});  // 0.75 + 0.1 == 0.85 in doubles: a change of exactly min_delta is none
    CHECK(es.wait_count() == 1);
    CHECK_FALSE(ctx.get_stop_requested());
    feed(es, {0.8});
    CHECK(es.stopped());
    CHECK(ctx.get_stop_requested());
    ctx.set_stop_requested(false);
  }
  SUBCASE("max mode") {
    dtl::callbacks::EarlyStopping es(ctx,
                                     Options{.monitor = "accuracy", .mode = dtl::callbacks::Mode::max, .patience = 2});
    CHECK(es.best_score() == -std::numeric_limits<double>::infinity());
    feed(es, {0.5, 0.6, 0.55, 0.7, 0.7});
    CHECK(es.best_score() == 0.7);
    CHECK(es.wait_count() == 1);
    CHECK_FALSE(es.stopped());
    feed(es, {0.69});
    CHECK(es.stopped());
    ctx.set_stop_requested(false);
  }
  SUBCASE("a non-finite metric stops at once unless check_finite is off") {
    dtl::callbacks::EarlyStopping es(ctx, Options{.patience = 5});
    feed(es, {1.0, std::numeric_limits<double>::quiet_NaN()});
    CHECK(es.stopped());
    CHECK(es.stop_reason() == "'validation_loss' = nan is not finite (best so far 1)");
    ctx.set_stop_requested(false);
    dtl::callbacks::EarlyStopping lenient(ctx, Options{.patience = 5, .check_finite = false});
    feed(lenient, {1.0, std::numeric_limits<double>::infinity()});
    CHECK_FALSE(lenient.stopped());
    CHECK(lenient.wait_count() == 1);
  }
  SUBCASE("stopping and divergence thresholds") {
    dtl::callbacks::EarlyStopping good(ctx, Options{.stopping_threshold = 0.1});
    feed(good, {0.5, 0.1});
    CHECK_FALSE(good.stopped());  // reaching is not beating
    feed(good, {0.09});
    CHECK(good.stopped());
    ctx.set_stop_requested(false);
    dtl::callbacks::EarlyStopping bad(ctx, Options{.divergence_threshold = 10.0});
    feed(bad, {5.0, 10.0});
    CHECK_FALSE(bad.stopped());
    feed(bad, {10.5});
    CHECK(bad.stopped());
    CHECK(bad.stop_reason() == "'validation_loss' = 10.5 is worse than the divergence threshold 10");
    ctx.set_stop_requested(false);
  }
  SUBCASE("state_dict round trip through text, and a state for another metric") {
    dtl::callbacks::EarlyStopping a(ctx, Options{.patience = 3});
    auto fresh = json::parse(a.state_dict().dump());
    CHECK(fresh["best_score"] == "inf");
    feed(a, {1.0, 2.0, 3.0});
    dtl::callbacks::EarlyStopping b(ctx, Options{.patience = 3});
    b.load_state_dict(json::parse(a.state_dict().dump()));
    CHECK(b.wait_count() == 2);
    CHECK(b.best_score() == 1.0);
    feed(b, {4.0});
    CHECK(b.stopped());
    ctx.set_stop_requested(false);
    dtl::callbacks::EarlyStopping c(ctx, Options{.patience = 3});
    c.load_state_dict(fresh);
    CHECK(c.best_score() == std::numeric_limits<double>::infinity());
    dtl::callbacks::EarlyStopping other(ctx, Options{.monitor = "accuracy", .mode = dtl::callbacks::Mode::max});
    other.load_state_dict(a.state_dict());  // watched validation_loss: set aside
    CHECK(other.wait_count() == 0);
    other.load_state_dict(json::object());  // a callback added since the checkpoint
    CHECK(other.wait_count() == 0);
  }
  SUBCASE("errors name the problem and the fix") {
    CHECK_THROWS_WITH_AS(dtl::callbacks::EarlyStopping(ctx, Options{.patience = 0}),
                         doctest::Contains("patience must be >= 1 (got 0)"), dtl::InvalidExperimentException);
    CHECK_THROWS_WITH_AS(dtl::callbacks::EarlyStopping(ctx, Options{.min_delta = -0.1}),
                         doctest::Contains("min_delta must be >= 0"), dtl::InvalidExperimentException);
    dtl::callbacks::EarlyStopping es(ctx, Options{.monitor = "val_acc"});
    CHECK_THROWS_WITH_AS(es.on_validation_end(metrics_with("validation_loss", 1.0)),
                         "dtl: EarlyStopping monitors 'val_acc', but validation reported no metric of that name (it "
                         "reported: 'loss_like', 'validation_loss'); set the callback's monitor to one of them",
                         dtl::InvalidExperimentException);
    dtl::MetricsJson m = dtl::MetricsJson::object();
    m["val_acc"] = "high";
    CHECK_THROWS_WITH_AS(es.on_validation_end(m), doctest::Contains("reported it as \"high\", not a number"),
                         dtl::InvalidExperimentException);
    CHECK_THROWS_WITH_AS(es.load_state_dict({{"mode", "down"}}), doctest::Contains("use \"min\" or \"max\""),
                         std::invalid_argument);
  }
  std::filesystem::remove_all(ctx.run_dir());
}

// ---- LearningRateMonitor ---------------------------------------------------------------------

// tests/log/decode_tfevents.py's output for the event files of a directory.
std::vector<json> decode_events(const fs::path& dir) {
  std::vector<json> events;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("events.out.tfevents.")) continue;
    test_support::Run out;
    for (auto& ev : test_support::decode_tfevents(e.path(), &out)) events.push_back(std::move(ev));
    REQUIRE_MESSAGE(out.status == 0, out.output);
  }
  return events;
}

TEST_CASE("LearningRateMonitor: history follows a StepLR schedule, and TensorBoard holds it") {
  test::Record rec;
  auto ctx = dtl::init(test::init_options("lr-monitor"));
  // 32 examples, batch 4: epoch_len 8. StepLR(gamma 0.5) on opt0 every epoch; opt1 constant.
  ScriptedTrial trial(ctx, rec,
                      {.losses = std::vector<double>(8, 1.0), .train_size = 32, .lr = 0.1, .step_lr_gamma = 0.5});
  auto monitor = std::make_shared<dtl::callbacks::LearningRateMonitor>(ctx);
  trial.callbacks = {{"lr_monitor", monitor}};
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{24},
            .reporting_period = dtl::Batch{4},
            .checkpoint_policy = dtl::CheckpointPolicy::none});
  REQUIRE(rec.workloads == Steps{4, 8, 12, 16, 20, 24});

  std::vector<dtl::callbacks::LearningRateRecord> want;
  for (std::int64_t step : rec.workloads) {
    const double decay = std::pow(0.5, static_cast<double>(step / 8));  // epochs completed; exact in binary
    want.push_back({step, 0, 0, 0.1 * decay});
    want.push_back({step, 0, 1, 0.01 * decay});
    want.push_back({step, 1, 0, 0.01});
  }
  CHECK(monitor->history() == want);
  CHECK(monitor->history()[3].lr == 0.05);  // step 8: the epoch's StepLR step has happened

  CHECK(dtl::callbacks::LearningRateMonitor::tag("lr", 0, 0, 1) == "lr-0");
  CHECK(dtl::callbacks::LearningRateMonitor::tag("lr", 1, 2, 3) == "lr-1-group2");

  if (::access(python().c_str(), X_OK) != 0) {
    MESSAGE("skipped the TensorBoard check: " << python() << " not found");
  } else {
    std::vector<json> scalars;
    for (auto& e : decode_events(ctx.get_tensorboard_path()))
      if (e.contains("tag") && e["tag"].get<std::string>().starts_with("lr-")) scalars.push_back(e);
    REQUIRE(scalars.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      const auto tag = want[i].optimizer == 0 ? "lr-0-group" + std::to_string(want[i].group) : std::string("lr-1");
      CHECK(scalars[i]["tag"] == tag);
      CHECK(scalars[i]["step"] == want[i].step);
      CHECK(scalars[i]["simple_value"].get<double>() == static_cast<double>(static_cast<float>(want[i].lr)));
    }
  }
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("LearningRateMonitor: tensorboard = false keeps only the history") {
  test::Record rec;
  auto ctx = dtl::init(test::init_options("lr-monitor-quiet"));
  ScriptedTrial trial(ctx, rec, {.losses = {1.0}, .train_size = 32});
  auto monitor = std::make_shared<dtl::callbacks::LearningRateMonitor>(
      ctx, dtl::callbacks::LearningRateMonitor::Options{.prefix = "rate", .tensorboard = false});
  trial.callbacks = {{"lr_monitor", monitor}};
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{4}, .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(monitor->history().size() == 3);
  bool wrote_lr = false;
  if (fs::exists(ctx.get_tensorboard_path()) && ::access(python().c_str(), X_OK) == 0)
    for (auto& e : decode_events(ctx.get_tensorboard_path()))
      wrote_lr = wrote_lr || (e.contains("tag") && e["tag"].get<std::string>().starts_with("rate-"));
  CHECK_FALSE(wrote_lr);
  std::filesystem::remove_all(ctx.run_dir());
}

// ---- docs/callbacks.md -----------------------------------------------------------------------

/// docs/callbacks.md's trial, with its build_callbacks verbatim, so the docs cannot drift.
class DocsTrial : public dtl::PyTorchTrial<DocsTrial> {
 public:
  explicit DocsTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.1));
  }
  dtl::Callbacks build_callbacks() {
    using namespace dtl::callbacks;
    return {
        {"early_stopping", std::make_shared<EarlyStopping>(ctx_, EarlyStopping::Options{.patience = 5})},
        {"reduce_lr", std::make_shared<ReduceLROnPlateauEveryValidation>(
                          opt_, "validation_loss", dtl::lr::ReduceLROnPlateauOptions{.factor = 0.5, .patience = 2})},
        {"lr_monitor", std::make_shared<LearningRateMonitor>(ctx_)},
    };
  }
  auto build_training_data_loader() { return dtl::DataLoader(test::ones(16), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(test::ones(4), {.batch_size = 4}); }
  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& b, std::int64_t, std::int64_t) {
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>&) { return {{"validation_loss", 1.0}}; }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

TEST_CASE("docs/callbacks.md: the three callbacks together") {
  auto ctx = dtl::init(test::init_options("callbacks-docs"));
  DocsTrial trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  // A constant validation loss: the lr halves after 3 validations, and patience 5 stops at 6.
  trainer.fit({.max_length = dtl::Batch{100},
               .validation_period = dtl::Batch{1},
               .checkpoint_policy = dtl::CheckpointPolicy::none});
  CHECK(trainer.state().batches_trained == 6);
  CHECK(ctx.optimizers()[0]->param_groups()[0].options().get_lr() == 0.05);
  std::filesystem::remove_all(ctx.run_dir());
}

}  // namespace dtl_callbacks_test
