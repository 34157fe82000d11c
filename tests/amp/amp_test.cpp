// Mixed precision on CPU: autocast regions (bfloat16), GradScaler's PyTorch semantics (skip and
// back off on inf/NaN, grow after growth_interval, unscale before clipping, state in Python's
// keys surviving checkpoint/resume bit for bit), configure_apex_amp mapped onto them (levels,
// a scaler per loss, static scales), and a bf16 training of the 784-256-10 MLP that converges.
#include "../core/test_trials.hpp"

#include <cmath>
#include <fstream>
#include <limits>

namespace {

using ABatch = std::tuple<torch::Tensor, torch::Tensor>;

/// Ten Gaussian clusters in 784 dimensions: a classification task the MLP learns in a few hundred steps.
std::pair<torch::Tensor, torch::Tensor> clusters(std::int64_t n, std::uint64_t seed) {
  auto g = torch::make_generator<torch::CPUGeneratorImpl>(seed);
  auto centers = torch::randn({10, 784}, g);
  auto labels = torch::randint(0, 10, {n}, g);
  auto x = centers.index_select(0, labels) + 2.0 * torch::randn({n, 784}, g);
  return {x, labels};
}

torch::nn::Sequential mlp784() {
  torch::nn::Sequential m;
  m->push_back(torch::nn::Linear(784, 256));
  m->push_back(torch::nn::ReLU());
  m->push_back(torch::nn::Linear(256, 10));
  return m;
}

double grad_norm(const std::vector<torch::Tensor>& params) {
  double s = 0;
  for (const auto& p : params)
    if (p.grad().defined()) s += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("autocast: a matmul runs in bfloat16 inside the region, float32 outside; losses and gradients stay float32") {
  torch::manual_seed(0);
  torch::nn::Linear lin(8, 4);
  auto x = torch::randn({3, 8});
  CHECK((lin(x).scalar_type() == torch::kFloat));
  {
    dtl::autocast region(torch::kCPU);
    auto y = lin(x);
    CHECK((y.scalar_type() == torch::kBFloat16));
    CHECK((torch::matmul(x, x.t()).scalar_type() == torch::kBFloat16));
    auto loss = torch::mse_loss(y, torch::zeros({3, 4}));
    CHECK((loss.scalar_type() == torch::kFloat));  // on CPU autocast's float32 list
    {
      dtl::autocast off(torch::kCPU, std::nullopt, /*enabled=*/false);
      CHECK((lin(x).scalar_type() == torch::kFloat));
    }
    CHECK((lin(x).scalar_type() == torch::kBFloat16));  // the outer region is back
    loss.backward();
  }
  CHECK((lin(x).scalar_type() == torch::kFloat));
  CHECK((lin->weight.grad().scalar_type() == torch::kFloat));
  CHECK_FALSE(dtl::detail::compat::autocast_enabled(torch::kCPU));
#if DTL_TORCH_2  // LibTorch 2.x also autocasts to float16 on the CPU
  {
    dtl::autocast half(torch::kCPU, torch::kHalf);
    CHECK((lin(x).scalar_type() == torch::kHalf));
  }
  CHECK_THROWS_WITH_AS(dtl::autocast(torch::kCPU, torch::kDouble), doctest::Contains("bfloat16 or float16"),
                       std::invalid_argument);
#else
  CHECK_THROWS_WITH_AS(dtl::autocast(torch::kCPU, torch::kHalf), doctest::Contains("bfloat16 only"), std::invalid_argument);
#endif
  {
    dtl::autocast cuda_here(torch::kCUDA);  // no GPU: disabled with a warning, as Python
    CHECK((lin(x).scalar_type() == torch::kFloat));
  }
}

TEST_CASE("GradScaler: scales the loss, skips the step and backs off on inf, grows after growth_interval") {
  torch::manual_seed(1);
  torch::nn::Linear lin(4, 1);
  auto opt = std::make_shared<torch::optim::SGD>(lin->parameters(), 0.1);
  dtl::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
  CHECK(scaler.get_scale() == 1024.0);
  auto x = torch::randn({5, 4});
  auto loss_of = [&] { return lin(x).pow(2).mean(); };

  // Unscaled gradients are what an unscaled backward gives.
  opt->zero_grad();
  loss_of().backward();
  const auto plain_grad = lin->weight.grad().clone();
  opt->zero_grad();
  auto scaled = scaler.scale(loss_of());
  CHECK(scaled.item<float>() == doctest::Approx(loss_of().item<float>() * 1024.0));
  scaled.backward();
  scaler.unscale_(*opt);
  CHECK(torch::allclose(lin->weight.grad(), plain_grad, 1e-6, 1e-7));
  CHECK_THROWS_WITH(scaler.unscale_(*opt), doctest::Contains("unscale_() has already been called"));
  CHECK(scaler.step(*opt));
  CHECK_THROWS_WITH(scaler.step(*opt), doctest::Contains("step() has already been called"));
  scaler.update();
  CHECK(scaler.get_scale() == 1024.0);
  CHECK(scaler.growth_tracker() == 1);

  // An inf gradient: no step (weights unchanged), the scale halves, the tracker resets.
  opt->zero_grad();
  const auto w = lin->weight.detach().clone();
  (scaler.scale(loss_of()) * std::numeric_limits<float>::infinity()).backward();
  CHECK_FALSE(scaler.step(*opt));
  scaler.update();
  CHECK(torch::equal(lin->weight.detach(), w));
  CHECK(scaler.get_scale() == 512.0);
  CHECK(scaler.growth_tracker() == 0);
  CHECK(scaler.steps_skipped() == 1);

  // A NaN too.
  opt->zero_grad();
  (scaler.scale(loss_of()) * std::numeric_limits<float>::quiet_NaN()).backward();
  CHECK_FALSE(scaler.step(*opt));
  scaler.update();
  CHECK(scaler.get_scale() == 256.0);

  // Three clean steps: the scale doubles at the third, the tracker restarts.
  for (int i = 1; i <= 3; ++i) {
    opt->zero_grad();
    scaler.scale(loss_of()).backward();
    CHECK(scaler.step(*opt));
    scaler.update();
    CHECK(scaler.get_scale() == (i < 3 ? 256.0 : 512.0));
    CHECK(scaler.growth_tracker() == (i < 3 ? i : 0));
  }
  CHECK_THROWS_WITH(scaler.update(), doctest::Contains("no inf checks were recorded"));

  const auto st = scaler.state_dict();  // Python's keys and types
  const nlohmann::json python_layout = {{"scale", 512.0}, {"growth_factor", 2.0}, {"backoff_factor", 0.5},
                                        {"growth_interval", 3}, {"_growth_tracker", 0}};
  CHECK(st == python_layout);
  dtl::GradScaler other;
  other.load_state_dict(st);
  CHECK(other.state_dict() == st);
  dtl::GradScaler off({.enabled = false});
  CHECK(off.state_dict().empty());
  CHECK(off.get_scale() == 1.0);
  CHECK(torch::equal(off.scale(x), x));
  CHECK_THROWS_WITH(other.load_state_dict(nlohmann::json::object()), doctest::Contains("empty"));
}

TEST_CASE("GradScaler's arithmetic is ATen's: products in double, stored as float32; an overflowing growth is refused") {
  // _amp_update_scale_: scale = float(double(scale) * factor); growth applies only if finite.
  torch::nn::Linear lin(2, 1);
  auto opt = std::make_shared<torch::optim::SGD>(lin->parameters(), 0.1);
  dtl::GradScaler s({.init_scale = 3.0e38, .growth_factor = 2.0, .backoff_factor = 0.3, .growth_interval = 1});
  auto x = torch::ones({1, 2});
  opt->zero_grad();
  s.scale(lin(x).sum() * 0).backward();  // finite gradients (zeros)
  s.step(*opt);
  s.update();
  CHECK(s.get_scale() == static_cast<double>(3.0e38f));  // 6e38 is not a float: kept
  opt->zero_grad();
  (s.scale(lin(x).sum()) * std::numeric_limits<float>::infinity()).backward();
  s.step(*opt);
  s.update();
  CHECK(s.get_scale() == static_cast<double>(static_cast<float>(static_cast<double>(3.0e38f) * 0.3)));
}

namespace {

// Regression under a wrapped GradScaler with clipping; at batch 7 the loss is made infinite,
// so that step is skipped and the scale backs off; the clip records the norm it was given.
class ScaledTrial : public dtl::PyTorchTrial<ScaledTrial> {
 public:
  ScaledTrial(dtl::PyTorchTrialContext& ctx, std::vector<double>* clip_norms = nullptr) : ctx_(ctx), clip_norms_(clip_norms) {
    torch::manual_seed(3);
    model_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    scaler_ = ctx.wrap_scaler(dtl::GradScaler({.init_scale = 256.0, .growth_interval = 4}));
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(3);
    x_ = torch::randn({64, 3}, g);
    y_ = (x_.matmul(torch::tensor({0.5, -1.0, 2.0})) + 0.1).unsqueeze(1);
  }
  auto build_training_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 32}); }
  dtl::Metrics train_batch(ABatch& b, std::int64_t, std::int64_t batch_idx) {
    torch::Tensor loss;
    {
      dtl::autocast region(torch::kCPU);
      loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    }
    auto scaled = scaler_->scale(loss);
    if (batch_idx == 7) scaled = scaled * std::numeric_limits<float>::infinity();
    ctx_.backward(scaled);
    ctx_.step_optimizer(opt_, [this](const std::vector<torch::Tensor>& params) {
      if (clip_norms_) clip_norms_->push_back(grad_norm(params));
      torch::nn::utils::clip_grad_norm_(params, 1.0);
    }, true, scaler_);
    scaler_->update();
    return {{"loss", loss}, {"scale", scaler_->get_scale()}};
  }
  dtl::Metrics evaluate_batch(ABatch& b) { return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}}; }

  std::shared_ptr<dtl::GradScaler> scaler_;
  torch::nn::Linear model_{nullptr};

 private:
  dtl::PyTorchTrialContext& ctx_;
  std::vector<double>* clip_norms_;
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

}  // namespace

TEST_CASE("wrap_scaler in the Trainer: unscaled before clipping, a skipped step, state resumed bit for bit") {
  const auto base = test::temp_run_dir("amp_scaler");
  auto options = [&](const char* run) {
    auto o = test::init_options("amp", 8, 0.05);
    o.run_dir = base / run;
    return o;
  };
  const dtl::FitOptions fit{.max_length = dtl::Batch{24}, .reporting_period = dtl::Batch{1}, .quiet = true};
  std::vector<double> norms;
  torch::Tensor straight_w;
  nlohmann::json straight_scaler;
  {
    auto ctx = dtl::init(options("straight"));
    ScaledTrial trial(ctx, &norms);
    dtl::Trainer(trial, ctx).fit(fit);
    straight_w = trial.model_->weight.detach().clone();
    straight_scaler = trial.scaler_->state_dict();
    CHECK(trial.scaler_->steps_skipped() == 1);
  }
  // The norms clip_grads saw are unscaled: the loss is scaled by 128-512, the norm is O(1-10).
  // Every batch clipped after unscale_ (PyTorch's order), the overflowing one too, which then
  // skipped its step.
  REQUIRE(norms.size() == 24);
  for (std::size_t i = 0; i < norms.size(); ++i) {
    INFO("batch " << i);
    if (i == 7)
      CHECK_FALSE(std::isfinite(norms[i]));
    else
      CHECK(norms[i] < 20.0);  // scaled by 128-512 they would be far above
  }
  const auto recs = test::records(base / "straight", "training");
  REQUIRE(recs.size() == 24);
  // The scale after each batch's update(): grows ×2 after 4 clean steps, halves at the inf.
  const double expected_scale[] = {256, 256, 256, 512, 512, 512, 512, 256, 256, 256, 256, 512};
  for (std::size_t i = 0; i < std::size(expected_scale); ++i) {
    INFO("batch " << i);
    CHECK(recs[i]["metrics"]["scale"].get<double>() == expected_scale[i]);
  }
  {
    auto ctx = dtl::init(options("resumed"));
    ScaledTrial trial(ctx);
    auto first = fit;
    first.max_length = dtl::Batch{10};
    dtl::Trainer(trial, ctx).fit(first);
  }
  {
    auto ctx = dtl::init(options("resumed"));
    ScaledTrial trial(ctx);
    auto second = fit;
    second.latest_checkpoint = test::latest_checkpoint(base / "resumed");
    dtl::Trainer(trial, ctx).fit(second);
    CHECK(torch::equal(trial.model_->weight.detach(), straight_w));
    CHECK(trial.scaler_->state_dict() == straight_scaler);
  }
  CHECK(test::records(base / "resumed", "training") == recs);
  // Determined's key in state_dict.pth.
  const auto root = dtl::detail::load_pickle_archive(test::latest_checkpoint(base / "resumed") / "state_dict.pth").toGenericDict();
  REQUIRE(root.contains("scaler_state_dict"));
  CHECK(dtl::detail::ivalue_to_json(root.at("scaler_state_dict")) == straight_scaler);
  std::filesystem::remove_all(base);
}

namespace {

// The seeds' pattern: two models, two optimizers, configure_apex_amp(num_losses=2), and one
// backward per loss. At batch `poison`, loss 1 is made infinite.
class TwoLossTrial : public dtl::PyTorchTrial<TwoLossTrial> {
 public:
  TwoLossTrial(dtl::PyTorchTrialContext& ctx, dtl::ApexAmpOptions amp, std::int64_t poison = -1)
      : ctx_(ctx), poison_(poison) {
    torch::manual_seed(5);
    a_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    b_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    opt1_ = ctx.wrap_optimizer(torch::optim::SGD(a_->parameters(), 0.05));
    opt2_ = ctx.wrap_optimizer(torch::optim::Adam(b_->parameters(), 0.01));
    ctx.configure_apex_amp({a_, b_}, {opt1_, opt2_}, amp);
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(9);
    x_ = torch::randn({32, 3}, g);
    y_ = x_.sum(1, true);
  }
  auto build_training_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8}); }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 16}); }
  dtl::Metrics train_batch(ABatch& b, std::int64_t, std::int64_t batch_idx) {
    auto out_a = a_(std::get<0>(b));
    seen_dtype = out_a.scalar_type();
    auto loss_a = torch::mse_loss(out_a, std::get<1>(b));
    auto loss_b = torch::mse_loss(b_(std::get<0>(b)), std::get<1>(b));
    if (batch_idx == poison_) loss_b = loss_b * std::numeric_limits<float>::infinity();
    ctx_.backward(loss_a, 0);
    ctx_.step_optimizer(opt1_);
    ctx_.backward(loss_b, 1);
    ctx_.step_optimizer(opt2_);
    return {{"loss_a", loss_a}, {"loss_b", loss_b}};
  }
  dtl::Metrics evaluate_batch(ABatch& b) {
    auto out = a_(std::get<0>(b));
    eval_dtype = out.scalar_type();
    return {{"validation_loss", torch::mse_loss(out, std::get<1>(b))}};
  }

  torch::nn::Linear a_{nullptr}, b_{nullptr};
  torch::ScalarType seen_dtype = torch::kFloat, eval_dtype = torch::kFloat;

 private:
  dtl::PyTorchTrialContext& ctx_;
  std::int64_t poison_;
  std::shared_ptr<torch::optim::SGD> opt1_;
  std::shared_ptr<torch::optim::Adam> opt2_;
  torch::Tensor x_, y_;
};

nlohmann::json amp_state_of(const std::filesystem::path& run) {
  const auto root = dtl::detail::load_pickle_archive(test::latest_checkpoint(run) / "state_dict.pth").toGenericDict();
  REQUIRE(root.contains("amp_state"));
  return dtl::detail::ivalue_to_json(root.at("amp_state"));
}

}  // namespace

TEST_CASE("configure_apex_amp: O1 autocasts train and evaluate, one scaler per loss, an overflow skips only its optimizer") {
  const auto base = test::temp_run_dir("amp_apex");
  const dtl::FitOptions fit{.max_length = dtl::Batch{8}, .quiet = true};
  auto opts = test::init_options("apex", 8, 0.05);
  opts.run_dir = base / "o1";
  auto ctx = dtl::init(opts);
  TwoLossTrial trial(ctx, {.num_losses = 2}, /*poison=*/2);
  torch::Tensor a_before, b_before;
  dtl::Trainer(trial, ctx).fit(fit);
  CHECK((trial.seen_dtype == torch::kBFloat16));
  CHECK((trial.eval_dtype == torch::kBFloat16));
  // Loss 1 overflowed once (batch 2): its scaler backed off; loss 0's never did.
  const auto st = amp_state_of(base / "o1");
  CHECK(st["loss_scaler0"]["loss_scale"] == 65536.0);
  CHECK(st["loss_scaler0"]["unskipped"] == 8);
  CHECK(st["loss_scaler1"]["loss_scale"] == 32768.0);
  CHECK(st["loss_scaler1"]["unskipped"] == 5);
  CHECK(torch::isfinite(trial.b_->weight).all().item<bool>());  // the poisoned step was skipped
  std::filesystem::remove_all(base);
}

TEST_CASE("configure_apex_amp: gradients equal the unscaled ones; O0 is float32; a static loss_scale stays; misuse is named") {
  const auto base = test::temp_run_dir("amp_levels");
  const dtl::FitOptions fit{.max_length = dtl::Batch{4}, .quiet = true};
  auto run = [&](const char* name, dtl::ApexAmpOptions amp) {
    auto o = test::init_options("apex", 8, 0.05);
    o.run_dir = base / name;
    auto ctx = dtl::init(o);
    TwoLossTrial trial(ctx, amp);
    dtl::Trainer(trial, ctx).fit(fit);
    return std::make_tuple(trial.seen_dtype, amp_state_of(base / name), trial.a_->weight.detach().clone());
  };
  const auto [dtype0, state0, w0] = run("o0", {.opt_level = "O0", .num_losses = 2});
  CHECK((dtype0 == torch::kFloat));
  const auto [dtype_static, state_static, w_static] = run("static", {.loss_scale = 128.0, .num_losses = 2});
  CHECK((dtype_static == torch::kBFloat16));
  CHECK(state_static["loss_scaler0"]["loss_scale"] == 128.0);
  CHECK(state_static["loss_scaler1"]["loss_scale"] == 128.0);
  {  // apex's static scaler counts every update as unskipped, an overflowing one included (only a
     // dynamic one resets the count); dtl still skips that step, where apex would apply it
    auto o = test::init_options("apex", 8, 0.05);
    o.run_dir = base / "static_overflow";
    auto ctx = dtl::init(o);
    TwoLossTrial trial(ctx, {.loss_scale = 128.0, .num_losses = 2}, /*poison=*/2);
    dtl::Trainer(trial, ctx).fit(fit);
    const auto st = amp_state_of(base / "static_overflow");
    CHECK(st["loss_scaler1"]["loss_scale"] == 128.0);
    CHECK(st["loss_scaler1"]["unskipped"] == 4);
    CHECK(st["loss_scaler0"]["unskipped"] == 4);
    CHECK(torch::isfinite(trial.b_->weight).all().item<bool>());
  }
  // Scaling is exact for powers of two: O1 with a static scale of 2^7 trains exactly as O1 with
  // scale 1 (O3), i.e. the unscaled gradients reached the optimizers.
  const auto [dtype3, state3, w3] = run("o3", {.opt_level = "O3", .num_losses = 2});
  CHECK(torch::equal(w_static, w3));
  CHECK_FALSE(torch::equal(w0, w3));  // bfloat16 forward vs float32: a different run

  auto o = test::init_options("apex_errors", 8, 0.05);
  o.run_dir = base / "errors";
  auto ctx = dtl::init(o);
  torch::nn::Linear m(2, 1);
  ctx.wrap_model(m);
  auto opt = ctx.wrap_optimizer(torch::optim::SGD(m->parameters(), 0.1));
  CHECK_THROWS_WITH(ctx.configure_apex_amp({m}, {opt}, {.opt_level = "O4"}), doctest::Contains("opt_level must be"));
  CHECK_THROWS_WITH(ctx.configure_apex_amp({m}, {opt}, {.loss_scale = "static"}), doctest::Contains("a number or \"dynamic\""));
  torch::nn::Linear stranger(2, 1);
  CHECK_THROWS_WITH(ctx.configure_apex_amp({stranger}, {opt}), doctest::Contains("was not wrapped"));
  ctx.configure_apex_amp({m}, {opt});
  CHECK_THROWS_WITH(ctx.wrap_scaler(dtl::GradScaler{}), doctest::Contains("cannot be combined"));
  CHECK_THROWS_WITH(ctx.configure_apex_amp({m}, {opt}), doctest::Contains("call it once"));
  auto loss = m(torch::ones({1, 2})).sum();
  CHECK_THROWS_WITH(ctx.backward(loss, 1), doctest::Contains("loss index 1 but configure_apex_amp(num_losses = 1)"));
  std::filesystem::remove_all(base);
}

TEST_CASE("a short bfloat16 training of the 784-256-10 MLP converges like float32") {
  at::set_num_threads(1);
  auto [x, y] = clusters(2048, 17);
  auto train = [&](bool bf16) {
    torch::manual_seed(23);
    auto model = mlp784();
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    double first = 0, last = 0;
    for (int step = 0; step < 150; ++step) {
      const auto i = (step * 64) % 2048;
      auto xb = x.narrow(0, i, 64), yb = y.narrow(0, i, 64);
      torch::Tensor loss;
      {
        dtl::autocast region(torch::kCPU, std::nullopt, bf16);
        loss = torch::cross_entropy_loss(model->forward(xb), yb);
      }
      opt.zero_grad();
      loss.backward();
      opt.step();
      if (step == 0) first = loss.item<double>();
      last = loss.item<double>();
    }
    torch::NoGradGuard no_grad;
    const double acc = (model->forward(x).argmax(1) == y).to(torch::kDouble).mean().item<double>();
    return std::make_tuple(first, last, acc);
  };
  const auto [f32_first, f32_last, f32_acc] = train(false);
  const auto [bf_first, bf_last, bf_acc] = train(true);
  MESSAGE("float32 loss " << f32_first << " -> " << f32_last << ", accuracy " << f32_acc);
  MESSAGE("bfloat16 loss " << bf_first << " -> " << bf_last << ", accuracy " << bf_acc);
  CHECK(bf_last < 0.2 * bf_first);
  CHECK(bf_acc > 0.95);
  CHECK(std::abs(bf_acc - f32_acc) < 0.03);
}
