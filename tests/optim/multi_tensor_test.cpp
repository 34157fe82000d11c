// torch.optim's foreach and fused steps (include/dtl/optim/): SGD, Adam and AdamW through
// wrap_optimizer with OptimizerOptions, bit for bit against the test Python's torch.optim with the
// same foreach/fused choice on CPU tensors (ATen runs the _foreach_* and fused kernels there too),
// under GradScaler with an inf step too; the state round trip through a checkpoint's Python layout;
// and the misuses that are errors. tests/cuda/cuda_test.cpp runs the same cases on CUDA.
#include "optim_cases.hpp"

namespace optim_test {

TEST_CASE("foreach and fused SGD, Adam and AdamW give torch.optim's numbers bit for bit (CPU tensors)") {
  if (!python_comparable("foreach and fused steps need LibTorch 2.x")) return;
  const auto all = specs();
  const auto py = python_results(all);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& s = all[i];
    CAPTURE(s.name);
    CAPTURE(s.optimizer);
    CAPTURE(s.impl);
    auto r = run_dtl(s, s.steps);
    for (std::size_t p = 0; p < r.params.size(); ++p) {
      CAPTURE(p);
      CHECK(hexes(r.params[p]) == py[i]["params"][p].get<std::vector<std::string>>());
    }
    CHECK(dtl_state(*r.opt, r.params) == py[i]["state"]);
    if (s.scaler) CHECK(r.scaler->get_scale() == py[i]["scale"].get<double>());
  }
}

TEST_CASE("fused and foreach state survives the checkpoint's Python layout: a resumed run equals an unbroken one") {
#if !DTL_TORCH_2
  return;
#endif
  for (const std::string impl : {"fused", "foreach"})
    for (const std::string opt : {"Adam", "SGD"}) {
      CAPTURE(impl);
      CAPTURE(opt);
      Spec s{.name = "resume", .optimizer = opt, .impl = impl, .kwargs = {{"lr", 0.01}}};
      if (opt == "SGD") s.kwargs["momentum"] = 0.9;
      s.scaler = true;
      s.inf_step = 1;  // fused Adam's device step count goes back: the saved step must say so
      auto whole = run_dtl(s, 6);

      auto first = run_dtl(s, 3);
      auto saved = dtl::detail::python_optimizer_state(*first.opt);
      REQUIRE(saved.has_value());
      auto group = saved->toGenericDict().at("param_groups").toList().get(0).toGenericDict();
      if (impl == "fused") {
        CHECK(group.at("fused").toBool());
      } else {
        CHECK(group.at("foreach").toBool());
      }
      // A fresh optimizer over copies of the parameters, loaded from the saved state, continues
      // with the draws the unbroken run made next.
      Outcome cont;
      for (const auto& p : first.params) cont.params.push_back(p.detach().clone().requires_grad_());
      auto ctx = dtl::init({.seed = 1, .run_dir = test::temp_run_dir("optim_resume")});  // before the draws
      torch::manual_seed(s.seed);
      for (std::size_t i = 0; i < s.shapes.size(); ++i) (void)torch::randn(s.shapes[i]);
      for (int step = 0; step < 3; ++step)
        for (const auto& p : cont.params) (void)torch::randn(p.sizes());
      cont.opt = make_optimizer(ctx, s, cont.params);
      REQUIRE(dtl::detail::load_python_optimizer_state(*cont.opt, *saved, "test"));
      cont.scaler = std::make_shared<dtl::GradScaler>(dtl::GradScalerOptions{.init_scale = s.scale, .growth_interval = 2});
      cont.scaler->load_state_dict(first.scaler->state_dict());
      for (int step = 3; step < 6; ++step) {
        torch::Tensor loss;
        for (const auto& p : cont.params) {
          auto term = (p * torch::randn(p.sizes())).sum();
          loss = loss.defined() ? loss + term : 0 + term;
        }
        cont.scaler->scale(loss).backward();
        cont.scaler->step(*cont.opt);
        cont.scaler->update();
        cont.opt->zero_grad();
      }
      std::filesystem::remove_all(ctx.run_dir());
      for (std::size_t p = 0; p < whole.params.size(); ++p) CHECK(hexes(cont.params[p]) == hexes(whole.params[p]));
      CHECK(dtl_state(*cont.opt, cont.params) == dtl_state(*whole.opt, whole.params));
      CHECK(whole.scaler->steps_skipped() == 1);
      CHECK(whole.scaler->steps_taken() == 5);
    }
}

TEST_CASE("foreach and fused: the misuses are errors that say what to do") {
  auto ctx = dtl::init({.seed = 1, .run_dir = test::temp_run_dir("optim_errors")});
  auto lin = ctx.wrap_model(torch::nn::Linear(2, 1));
#if DTL_TORCH_2
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(torch::optim::Adam(lin->parameters()), {.foreach = true, .fused = true}),
                       doctest::Contains("fused and foreach cannot both be true"), dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(torch::optim::RMSprop(lin->parameters()), {.fused = true}),
                       doctest::Contains("foreach, fused and capturable steps exist for SGD, Adam and AdamW only"),
                       dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(torch::optim::Adagrad(lin->parameters()), {.capturable = true}),
                       doctest::Contains("exist for SGD, Adam and AdamW only"), dtl::InvalidExperimentException);
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(torch::optim::AdamW(lin->parameters()), {.foreach = true, .capturable = true}),
                       doctest::Contains("capturable cannot be combined with foreach = true"),
                       dtl::InvalidExperimentException);
  // A learning rate changed while a CUDA graph is captured would be repeated by every replay.
  {
    auto adam = ctx.wrap_optimizer(torch::optim::Adam(lin->parameters(), 0.01), {.capturable = true});
    (lin->forward(torch::ones({1, 2})).sum()).backward();
    adam->step();  // writes the device lr
    adam->param_groups()[0].options().set_lr(0.02);
    dtl::detail::cuda_graph_capturing() = true;
    CHECK_THROWS_WITH_AS(adam->step(), doctest::Contains("changed inside train_batch while it was captured"),
                         dtl::InvalidExperimentException);
    dtl::detail::cuda_graph_capturing() = false;
    adam->step();  // outside a capture the new lr is simply written
  }
  // An integer parameter cannot take a fused step: named at the step.
  auto ints = torch::zeros({2}, torch::kLong);
  ints.mutable_grad() = torch::ones({2}, torch::kLong);
  auto sgd = ctx.wrap_optimizer(torch::optim::SGD(std::vector<torch::Tensor>{ints}, 0.1), {.fused = true});
  CHECK_THROWS_WITH_AS(sgd->step(), doctest::Contains("fused=true needs floating-point parameters"),
                       dtl::InvalidExperimentException);
  // Backward passes per step still checked, in the options too.
  CHECK_THROWS_AS(ctx.wrap_optimizer(torch::optim::SGD(lin->parameters(), 0.1), {.backward_passes_per_step = 0}),
                  dtl::InvalidExperimentException);
#else
  CHECK_THROWS_WITH_AS(ctx.wrap_optimizer(torch::optim::Adam(lin->parameters()), {.fused = true}),
                       doctest::Contains("need LibTorch 2.x"), dtl::InvalidExperimentException);
#endif
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("a trial's SGD and Adam keep LibTorch's single-tensor steps on the CPU by default") {
  // The default on CPU tensors is the single-tensor arithmetic (Python's default there), so a
  // wrapped SGD steps exactly as LibTorch's SGD does.
  auto ctx = dtl::init({.seed = 1, .run_dir = test::temp_run_dir("optim_default")});
  torch::manual_seed(3);
  auto a = torch::randn({5, 3}).requires_grad_();
  auto b = a.detach().clone().requires_grad_();
  auto wrapped = ctx.wrap_optimizer(torch::optim::SGD(std::vector<torch::Tensor>{a}, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01)));
  torch::optim::SGD plain(std::vector<torch::Tensor>{b}, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
  for (int i = 0; i < 4; ++i) {
    auto w = torch::randn({5, 3});
    (a * w).sum().backward();
    (b * w).sum().backward();
    wrapped->step();
    plain.step();
    wrapped->zero_grad();
    plain.zero_grad();
  }
  CHECK(torch::equal(a, b));
  std::filesystem::remove_all(ctx.run_dir());
}

}  // namespace optim_test
