// The optimizers torch.optim has and LibTorch lacks (include/dtl/optim/torch_optim.hpp):
// Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop, bit for bit against the test Python's
// torch.optim (tests/optim/optim_reference.py, the same draws); their state across the languages
// (dtl's state_dict loaded by Python's `load_state_dict` continues as Python's own run does, and
// Python's loaded by dtl continues as dtl's); a Trainer checkpoint's exact resume; torch::save;
// the misuses; and a user's own optimizer on dtl::optim::PythonOptimizer.
#include "optim_cases.hpp"

namespace optim_test {

namespace {

std::vector<Spec> torch_optim_specs() {
  std::vector<Spec> v;
  auto add = [&](std::string name, std::string opt, json kwargs) {
    for (const char* impl : {"single", "default"}) {  // default: foreach=None, single-tensor on the CPU
      Spec s{.name = name, .optimizer = opt, .impl = impl, .kwargs = kwargs};
      s.steps = 10;
      v.push_back(s);
    }
  };
  add("Adadelta", "Adadelta", json::object());
  add("Adadelta rho weight decay maximize", "Adadelta",
      {{"lr", 0.5}, {"rho", 0.8}, {"eps", 1e-5}, {"weight_decay", 0.01}, {"maximize", true}});
  add("Adamax", "Adamax", json::object());
  add("Adamax betas weight decay", "Adamax", {{"lr", 0.01}, {"betas", {0.8, 0.99}}, {"weight_decay", 0.1}});
  add("NAdam", "NAdam", json::object());
  add("NAdam weight decay momentum_decay", "NAdam", {{"lr", 0.01}, {"weight_decay", 0.1}, {"momentum_decay", 0.01}});
  add("NAdam decoupled weight decay maximize", "NAdam",
      {{"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled_weight_decay", true}, {"maximize", true}});
  // beta2 = 0.99: the rectified branch (rho_t > 5) from step 6; the default beta2 reaches it at step 6 too
  add("RAdam", "RAdam", json::object());
  add("RAdam betas weight decay", "RAdam", {{"lr", 0.01}, {"betas", {0.8, 0.99}}, {"weight_decay", 0.1}});
  add("RAdam decoupled weight decay", "RAdam", {{"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled_weight_decay", true}});
  add("ASGD", "ASGD", json::object());
  add("ASGD averaging from step 3", "ASGD", {{"lr", 0.05}, {"lambd", 0.01}, {"alpha", 0.5}, {"t0", 3}, {"weight_decay", 0.01}});
  add("Rprop", "Rprop", json::object());
  add("Rprop etas step sizes maximize", "Rprop",
      {{"lr", 0.05}, {"etas", {0.3, 1.5}}, {"step_sizes", {1e-3, 0.2}}, {"maximize", true}});
  // A scheduler halving the learning rate each step, a float64 parameter, and GradScaler's
  // unscale-and-skip (an inf loss at step 2) on optimizers without a fused step.
  for (const char* opt : {"Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"}) {
    Spec s{.name = "lr halved per step, float64", .optimizer = opt, .impl = "single", .kwargs = {{"lr", 0.05}}};
    s.halve_lr = true;
    s.dtypes = {"float32", "float64", "float32"};
    v.push_back(s);
    Spec g{.name = "GradScaler with an inf step", .optimizer = opt, .impl = "single", .kwargs = {{"lr", 0.05}}};
    g.scaler = true;
    g.inf_step = 2;
    v.push_back(g);
  }
  return v;
}

void check_equal(const Outcome& r, const json& py) {
  for (std::size_t p = 0; p < r.params.size(); ++p) {
    CAPTURE(p);
    CHECK(hexes(r.params[p]) == py["params"][p].get<std::vector<std::string>>());
  }
  CHECK(dtl_state(*r.opt, r.params) == py["state"]);
}

const char* const kAll[] = {"Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"};
constexpr const char* kTorch2Arithmetic =
    "dtl's optimizers compute as torch >= 2.0 does; torch 1.13's Python computed differently (docs/differences.md)";

}  // namespace

TEST_CASE("Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop give torch.optim's numbers bit for bit") {
  if (!python_comparable(kTorch2Arithmetic)) return;
  const auto all = torch_optim_specs();
  const auto py = python_results(all);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& s = all[i];
    CAPTURE(s.name);
    CAPTURE(s.optimizer);
    CAPTURE(s.impl);
    auto r = run_dtl(s, s.steps);
    check_equal(r, py[i]);
    if (s.scaler) CHECK(r.scaler->get_scale() == py[i]["scale"].get<double>());
  }
}

TEST_CASE("their state crosses the languages: Python resumes dtl's state_dict and dtl resumes Python's, exactly") {
  if (!python_comparable(kTorch2Arithmetic)) return;
  const auto dir = test::temp_run_dir("torch_optim_cross");
  std::filesystem::create_directories(dir);
  std::vector<Spec> to_python, from_python;
  std::vector<Outcome> dtl_whole;
  for (const char* opt : kAll) {
    Spec s{.name = "cross", .optimizer = opt, .impl = "single", .kwargs = {{"lr", 0.02}}};
    if (std::string(opt) == "ASGD") s.kwargs["t0"] = 2;  // the average is under way at the save
    s.steps = 8;
    // dtl runs whole, writing its state after 3 steps; Python loads it there and goes on.
    auto save = s;
    save.save_at = 3;
    save.save_to = (dir / (std::string(opt) + "_dtl.pt")).string();
    dtl_whole.push_back(run_dtl(save, save.steps));
    auto load = s;
    load.load_at = 3;
    load.load_from = save.save_to;
    to_python.push_back(load);
    // Python runs whole, writing its state after 5 steps; dtl loads it there and goes on.
    auto py_save = s;
    py_save.save_at = 5;
    py_save.save_to = (dir / (std::string(opt) + "_python.pt")).string();
    to_python.push_back(py_save);
    auto dtl_load = s;
    dtl_load.load_at = 5;
    dtl_load.load_from = py_save.save_to;
    from_python.push_back(dtl_load);
  }
  const auto py = python_results(to_python);
  for (std::size_t i = 0; i < std::size(kAll); ++i) {
    CAPTURE(kAll[i]);
    INFO("Python, resumed from dtl's state after 3 steps, equals dtl's unbroken run");
    check_equal(dtl_whole[i], py[2 * i]);
    INFO("dtl, resumed from Python's state after 5 steps, equals Python's unbroken run");
    check_equal(run_dtl(from_python[i], from_python[i].steps), py[2 * i + 1]);
  }
  std::filesystem::remove_all(dir);
}

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

/// Two models, one with NAdam (its float32 mu_product in the state) and one with ASGD (eta, mu,
/// and the average) under a StepLR, checkpointed and resumed by the Trainer.
class TorchOptimTrial : public dtl::PyTorchTrial<TorchOptimTrial> {
 public:
  explicit TorchOptimTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::manual_seed(3);
    a_ = ctx.wrap_model(torch::nn::Linear(3, 2));
    b_ = ctx.wrap_model(torch::nn::Linear(3, 2));
    nadam_ = ctx.wrap_optimizer(dtl::optim::NAdam(a_->parameters(), dtl::optim::NAdamOptions(0.01).weight_decay(0.01)));
    asgd_ = ctx.wrap_optimizer(dtl::optim::ASGD(b_->parameters(), dtl::optim::ASGDOptions(0.05).t0(2)));
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(asgd_, 2, 0.5), dtl::StepMode::STEP_EVERY_BATCH);
  }
  auto build_training_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto loss = loss_of(b);
    ctx_.backward(loss);
    ctx_.step_optimizer(nadam_);
    ctx_.step_optimizer(asgd_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) { return {{"validation_loss", loss_of(b)}}; }

  std::shared_ptr<dtl::optim::NAdam> nadam_;
  std::shared_ptr<dtl::optim::ASGD> asgd_;

 private:
  torch::Tensor loss_of(Batch& b) {
    auto& [x, y] = b;
    return torch::mse_loss(a_(x), y) + torch::mse_loss(b_(x), y);
  }
  static dtl::TensorDataset<2> data() {
    auto x = torch::linspace(-1, 1, 96).reshape({32, 3});
    return dtl::TensorDataset(x, torch::stack({x.sum(1), x.prod(1)}, 1));
  }
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear a_{nullptr}, b_{nullptr};
};

std::vector<torch::Tensor> weights_of(dtl::PyTorchTrialContext& ctx) {
  std::vector<torch::Tensor> out;
  for (const auto& m : ctx.models())
    for (const auto& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("a Trainer checkpoint of NAdam and ASGD resumes exactly, in torch.optim's layout") {
  const auto base = test::temp_run_dir("torch_optim_resume");
  const dtl::FitOptions fit{.max_length = dtl::Batch{12}, .validation_period = dtl::Batch{4}, .quiet = true};
  std::vector<torch::Tensor> straight, resumed;
  json straight_state;
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "B"});
    TorchOptimTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit(fit);
    straight = weights_of(ctx);
    straight_state = dtl_state(*trial.asgd_, trial.asgd_->parameters());
  }
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "A"});
    TorchOptimTrial trial(ctx);
    auto first = fit;
    first.max_length = dtl::Batch{5};
    dtl::Trainer(trial, ctx).fit(first);
  }
  const auto ckpt = test::latest_checkpoint(base / "A");
  {  // the checkpoint holds torch.optim's layout for both
    const auto sd = dtl::detail::load_pickle_archive(ckpt / "state_dict.pth").toGenericDict();
    const auto opts = sd.at("optimizers_state_dict").toListRef();
    REQUIRE(opts.size() == 2);
    const auto nadam_group = opts[0].toGenericDict().at("param_groups").toListRef()[0].toGenericDict();
    CHECK(nadam_group.at("momentum_decay").toDouble() == 4e-3);
    CHECK(opts[0].toGenericDict().at("state").toGenericDict().at(c10::IValue(std::int64_t{0})).toGenericDict().contains(
        "mu_product"));
    const auto asgd_group = opts[1].toGenericDict().at("param_groups").toListRef()[0].toGenericDict();
    CHECK(asgd_group.at("t0").toDouble() == 2.0);
    CHECK(asgd_group.contains("initial_lr"));  // StepLR's key, where Python's scheduler keeps it
  }
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "A"});
    TorchOptimTrial trial(ctx);
    auto second = fit;
    second.latest_checkpoint = ckpt;
    dtl::Trainer(trial, ctx).fit(second);
    resumed = weights_of(ctx);
    CHECK(dtl_state(*trial.asgd_, trial.asgd_->parameters()) == straight_state);
  }
  REQUIRE(resumed.size() == straight.size());
  for (std::size_t i = 0; i < straight.size(); ++i) CHECK(torch::equal(resumed[i], straight[i]));
  auto resumed_validations = test::records(base / "A", "validation");
  std::erase_if(resumed_validations, [](const json& r) { return r["steps_completed"] == 5; });  // the first fit's last
  CHECK(resumed_validations == test::records(base / "B", "validation"));
  std::filesystem::remove_all(base);
}

TEST_CASE("torch::save and torch::load of dtl's optimizers keep their state") {
  for (const char* opt : kAll) {
    CAPTURE(opt);
    Spec s{.name = "torch::save", .optimizer = opt, .impl = "single", .kwargs = {{"lr", 0.02}}};
    auto first = run_dtl(s, 3);
    const auto file = test::temp_run_dir("torch_optim_save") / "opt.pt";
    std::filesystem::create_directories(file.parent_path());
    torch::save(*first.opt, file.string());
    auto again = run_dtl(s, 1);  // other state, replaced by the load
    torch::load(*again.opt, file.string());
    std::filesystem::remove_all(file.parent_path());
    CHECK(dtl_state(*again.opt, again.params) == dtl_state(*first.opt, first.params));
  }
}

TEST_CASE("dtl's optimizers refuse what torch.optim refuses, and the steps they do not have") {
  auto ctx = dtl::init({.seed = 1, .run_dir = test::temp_run_dir("torch_optim_errors")});
  auto lin = ctx.wrap_model(torch::nn::Linear(2, 1));
  using namespace dtl::optim;
  CHECK_THROWS_WITH_AS(Adadelta(lin->parameters(), AdadeltaOptions(1.0).rho(1.5)),
                       doctest::Contains("Adadelta: invalid rho value: 1.5"), dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(Adamax(lin->parameters(), AdamaxOptions(-0.1)), doctest::Contains("Adamax: invalid learning rate"),
                       dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(NAdam(lin->parameters(), NAdamOptions().betas({0.9, 1.0})),
                       doctest::Contains("NAdam: invalid beta parameter at index 1: 1"), dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(RAdam(lin->parameters(), RAdamOptions().eps(-1)), doctest::Contains("RAdam: invalid epsilon"),
                       dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(ASGD(lin->parameters(), ASGDOptions().lambd(-1)), doctest::Contains("ASGD: invalid lambd"),
                       dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(Rprop(lin->parameters(), RpropOptions().etas({1.5, 1.2})), doctest::Contains("etaminus"),
                       dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(NAdam(lin->parameters()), {.foreach = true}),
                       doctest::Contains("leave OptimizerOptions.foreach"), dtl::InvalidExperimentException);
  // A group's own options are kept (LibTorch 2.x's add_param_group would give it the defaults).
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{lin->weight});
  groups.emplace_back(std::vector<torch::Tensor>{lin->bias}, std::make_unique<AdamaxOptions>(AdamaxOptions(0.5).eps(0.25)));
  Adamax two(std::move(groups), AdamaxOptions(0.1));
  CHECK(static_cast<AdamaxOptions&>(two.param_groups()[0].options()).lr() == 0.1);
  CHECK(static_cast<AdamaxOptions&>(two.param_groups()[1].options()).lr() == 0.5);
  CHECK(static_cast<AdamaxOptions&>(two.param_groups()[1].options()).eps() == 0.25);
  // A state that is not this optimizer's: named, nothing half-loaded into the groups' options.
  auto radam = RAdam(lin->parameters());
  auto adadelta_state = Adadelta(lin->parameters()).python_state_dict();
  CHECK_THROWS_WITH_AS(radam.load_python_state_dict(adadelta_state, "the checkpoint's optimizer 0"),
                       doctest::Contains("the checkpoint's optimizer 0: param_group has no 'betas'"), dtl::CheckpointError);
  std::filesystem::remove_all(ctx.run_dir());
}

namespace {

// A user's own optimizer on dtl::optim::PythonOptimizer (the example in python_optimizer.hpp,
// with momentum): sign descent with a momentum buffer, saved under Python-style keys.
struct SignMomentumOptions : torch::optim::OptimizerCloneableOptions<SignMomentumOptions> {
  SignMomentumOptions(double lr = 0.01) : lr_(lr) {}  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  TORCH_ARG(double, beta) = 0.9;
  double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct SignMomentumState : torch::optim::OptimizerCloneableParamState<SignMomentumState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);
};
class SignMomentum : public dtl::optim::PythonOptimizer<SignMomentum, SignMomentumOptions, SignMomentumState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "SignMomentum";
  static void check(const Options& o) {
    if (o.beta() < 0 || o.beta() >= 1) throw dtl::InvalidExperimentException("SignMomentum: beta must be in [0, 1)");
  }
  static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options&) {
    auto s = std::make_unique<State>();
    s->momentum_buffer(torch::zeros_like(p));
    return s;
  }
  static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
    s.momentum_buffer().lerp_(grad, 1 - o.beta());
    p.add_(s.momentum_buffer().sign(), -o.lr());
  }
  static void group_out(const Options& o, Dict& g) {
    g.insert("lr", o.lr());
    g.insert("beta", o.beta());
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) { o.lr(num(g, "lr", w)).beta(num(g, "beta", w)); }
  static void state_out(const State& s, Dict& d) { d.insert("momentum_buffer", s.momentum_buffer().detach().cpu()); }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string& w) {
    auto s = std::make_unique<State>();
    s->momentum_buffer(dtl::optim::python_layout::in(dtl::optim::python_layout::at(d, "momentum_buffer", w), p));
    return s;
  }
};

class SignMomentumTrial : public dtl::PyTorchTrial<SignMomentumTrial> {
 public:
  explicit SignMomentumTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::manual_seed(5);
    model_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    opt_ = ctx.wrap_optimizer(SignMomentum(model_->parameters(), SignMomentumOptions(0.05).beta(0.8)));
  }
  auto build_training_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto& [x, y] = b;
    auto loss = torch::mse_loss(model_(x), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) {
    auto& [x, y] = b;
    return {{"validation_loss", torch::mse_loss(model_(x), y)}};
  }
  torch::nn::Linear model_{nullptr};

 private:
  static dtl::TensorDataset<2> data() {
    auto x = torch::linspace(-1, 1, 48).reshape({16, 3});
    return dtl::TensorDataset(x, x.sum(1, true));
  }
  dtl::PyTorchTrialContext& ctx_;
  std::shared_ptr<SignMomentum> opt_;
};

}  // namespace

TEST_CASE("a user's optimizer on PythonOptimizer checkpoints in its Python layout and resumes exactly") {
  const auto base = test::temp_run_dir("user_optimizer");
  const dtl::FitOptions fit{.max_length = dtl::Batch{8}, .quiet = true};
  torch::Tensor straight;
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "B"});
    SignMomentumTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit(fit);
    straight = trial.model_->weight.detach().clone();
  }
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "A"});
    SignMomentumTrial trial(ctx);
    auto first = fit;
    first.max_length = dtl::Batch{3};
    dtl::Trainer(trial, ctx).fit(first);
  }
  const auto ckpt = test::latest_checkpoint(base / "A");
  const auto sd = dtl::detail::load_pickle_archive(ckpt / "state_dict.pth").toGenericDict();
  const auto opt = sd.at("optimizers_state_dict").toListRef()[0].toGenericDict();
  CHECK(opt.at("param_groups").toListRef()[0].toGenericDict().at("beta").toDouble() == 0.8);
  CHECK(opt.at("state").toGenericDict().at(c10::IValue(std::int64_t{1})).toGenericDict().contains("momentum_buffer"));
  {
    auto ctx = dtl::init({.hparams = {{"global_batch_size", 4}}, .seed = 1, .run_dir = base / "A"});
    SignMomentumTrial trial(ctx);
    auto second = fit;
    second.latest_checkpoint = ckpt;
    dtl::Trainer(trial, ctx).fit(second);
    CHECK(torch::equal(trial.model_->weight, straight));
  }
  std::filesystem::remove_all(base);
}


namespace {

// SignMomentum's layout as field lists: the same keys, types and order as the four functions above.
class SignMomentumFields
    : public dtl::optim::PythonOptimizer<SignMomentumFields, SignMomentumOptions, SignMomentumState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "SignMomentumFields";
  static void check(const Options& o) { SignMomentum::check(o); }
  static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o) {
    return SignMomentum::init_state(p, o);
  }
  static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
    SignMomentum::update(p, std::move(grad), s, o);
  }
  static void group_fields(Fields& f, Options& o) { f("lr", o.lr())("beta", o.beta()); }
  static void state_fields(Fields& f, State& s) { f("momentum_buffer", s.momentum_buffer()); }
};

template <class Opt>
std::shared_ptr<Opt> stepped_twice(torch::nn::Linear& model) {
  auto opt = std::make_shared<Opt>(model->parameters(), SignMomentumOptions(0.05).beta(0.8));
  for (int i = 0; i < 2; ++i) {
    opt->zero_grad();
    model(torch::ones({2, 3})).sum().backward();
    opt->step();
  }
  return opt;
}

}  // namespace

TEST_CASE("an optimizer's field lists save and load the layout its four hand-written functions do") {
  torch::manual_seed(3);
  torch::nn::Linear a(3, 1);
  torch::nn::Linear b(3, 1);
  b->weight.detach().copy_(a->weight);
  b->bias.detach().copy_(a->bias);
  auto by_hand = stepped_twice<SignMomentum>(a);
  auto by_fields = stepped_twice<SignMomentumFields>(b);
  const auto hand_bytes = torch::pickle_save(by_hand->python_state_dict());
  CHECK(torch::pickle_save(by_fields->python_state_dict()) == hand_bytes);

  // Each loads the other's state dict, and both go on to the same weights.
  by_fields->param_groups()[0].options().set_lr(1.0);
  by_fields->load_python_state_dict(by_hand->python_state_dict(), "test");
  CHECK(by_fields->param_groups()[0].options().get_lr() == 0.05);
  by_hand->load_python_state_dict(by_fields->python_state_dict(), "test");
  by_hand->zero_grad();
  by_fields->zero_grad();
  a(torch::ones({2, 3})).sum().backward();
  b(torch::ones({2, 3})).sum().backward();
  by_hand->step();
  by_fields->step();
  CHECK(torch::equal(a->weight, b->weight));
  CHECK(torch::pickle_save(by_fields->python_state_dict()) == torch::pickle_save(by_hand->python_state_dict()));
}

TEST_CASE("python_layout::Fields names what a saved layout lacks, and defaults a missing flag as torch.optim does") {
  using dtl::optim::python_layout::Fields;
  auto group = dtl::optim::python_layout::str_dict();
  group.insert("lr", 0.5);
  double lr = 0, eps = 0;
  bool maximize = true;
  auto f = Fields::loading_from(group, "ckpt/optimizer 0");
  f("lr", lr)("maximize", maximize);
  CHECK(lr == 0.5);
  CHECK_FALSE(maximize);  // Python's __setstate__: setdefault("maximize", False)
  CHECK_THROWS_WITH_AS(f("eps", eps), "ckpt/optimizer 0: param_group has no 'eps'", dtl::CheckpointError);

  const auto p = torch::zeros({2}, torch::kDouble);
  auto state = dtl::optim::python_layout::str_dict();
  state.insert("exp_avg", torch::ones({2}));
  state.insert("momentum_buffer", c10::IValue());
  torch::Tensor exp_avg, momentum, exp_avg_sq;
  auto s = Fields::loading_from(state, "ckpt", &p);
  s("exp_avg", exp_avg).optional("momentum_buffer", momentum);
  CHECK(exp_avg.dtype() == torch::kDouble);  // made the parameter's own
  CHECK_FALSE(momentum.defined());                  // None: not there
  CHECK_THROWS_WITH_AS(s("exp_avg_sq", exp_avg_sq), "ckpt: a parameter's state has no 'exp_avg_sq'", dtl::CheckpointError);

  // Saving: the list's order is the dict's, fixed and None keys included; an undefined optional is left out.
  auto out = dtl::optim::python_layout::str_dict();
  double one = 1.0;
  bool yes = true;
  torch::Tensor none;
  Fields::saving_to(out)("lr", one)("amsgrad", yes).none("foreach").fixed("capturable", false).optional("m", none);
  std::vector<std::string> keys;
  for (const auto& e : out) keys.push_back(e.key().toStringRef());
  CHECK(keys == std::vector<std::string>{"lr", "amsgrad", "foreach", "capturable"});
  CHECK(out.at("foreach").isNone());
}

}  // namespace optim_test
