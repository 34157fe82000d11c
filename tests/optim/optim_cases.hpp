// The cases of tests/optim/multi_tensor_test.cpp (CPU) and tests/cuda/cuda_test.cpp (CUDA):
// SGD, Adam and AdamW wrapped with a foreach/fused choice, stepped on a linear loss whose weights
// are drawn per step, in C++ and by tests/optim/optim_reference.py in the test Python's torch.optim
// with the same draws, compared bit for bit.
#ifndef DTL_TESTS_OPTIM_OPTIM_CASES_HPP
#define DTL_TESTS_OPTIM_OPTIM_CASES_HPP

#include "../prelude.hpp"
#include "../support/external.hpp"
#include "../core/test_trials.hpp"

// detail::python_optimizer_state / load_python_optimizer_state: only checkpoint-inl.hpp includes
// it, which a libdtl build (dtl_cuda_tests) does not see.
#include <dtl/checkpoint/optimizer_state.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace optim_test {

using nlohmann::json;

/// One case: the optimizer and its arguments, the implementation, and how the steps are taken.
struct Spec {
  std::string name, optimizer, impl;  // impl: single | foreach | fused | default
  json kwargs;
  std::vector<std::vector<std::int64_t>> shapes = {{3, 4}, {4}, {2, 3, 2}};
  std::vector<std::string> dtypes = {"float32", "float32", "float32"};
  std::size_t split = 2;  // parameters [0, split) in group 0, the rest in group 1 at lr2
  double lr2 = 0.003;
  int steps = 6;
  bool scaler = false;
  bool unscale_first = false;
  bool halve_lr = false;  // every group's learning rate halved after each step (as a scheduler would)
  int inf_step = -1;
  double scale = 1024.0;
  std::uint64_t seed = 7;
  std::string device = "cpu";  // values are drawn on the CPU and moved there
  // Resuming across the languages (optim_reference.py): the parameters and the optimizer's
  // state_dict written with torch.save's format before step `save_at`; or, in place of the
  // steps before `load_at` (their weights still drawn), read from `load_from`.
  int save_at = -1;
  std::string save_to;
  int load_at = -1;
  std::string load_from;

  [[nodiscard]] json to_json() const {
    return {{"optimizer", optimizer}, {"impl", impl}, {"kwargs", kwargs}, {"shapes", shapes},
            {"dtypes", dtypes}, {"split", split}, {"lr2", lr2}, {"steps", steps}, {"scaler", scaler},
            {"unscale_first", unscale_first}, {"halve_lr", halve_lr}, {"inf_step", inf_step}, {"scale", scale}, {"seed", seed},
            {"device", device}, {"save_at", save_at}, {"save_to", save_to}, {"load_at", load_at},
            {"load_from", load_from}};
  }
};

inline double kw(const json& k, const char* name, double def) { return k.contains(name) ? k.at(name).get<double>() : def; }

/// Optimizer O over two groups, wrapped: parameters `a` with `opts`, and `b` (when there are any)
/// with the same options at lr2.
template <class O, class Options>
std::shared_ptr<torch::optim::Optimizer> wrap_two_groups(dtl::PyTorchTrialContext& ctx, const Spec& s,
                                                         const std::vector<torch::Tensor>& a,
                                                         const std::vector<torch::Tensor>& b, const Options& opts,
                                                         const dtl::OptimizerOptions& o) {
  std::vector<torch::optim::OptimizerParamGroup> g;
  g.emplace_back(a);
  auto second = opts;
  second.lr(s.lr2);
  if (!b.empty()) g.emplace_back(b, std::make_unique<Options>(second));
  return ctx.wrap_optimizer(O(std::move(g), opts), o);
}

/// The test Python can compare dtl's optimizers with torch.optim: its torch is there, and is 2.x
/// when `needs_torch2` names what 1.13 lacks (else a message says why the case is skipped).
inline bool python_comparable(const char* needs_torch2) {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return false;
  }
#if !DTL_TORCH_2
  MESSAGE("skipped: " << needs_torch2);
  return false;
#else
  (void)needs_torch2;
  return true;
#endif
}

/// dtl's Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop (optim/torch_optim.hpp) from a spec's
/// kwargs (torch.optim's names; an absent one keeps the default); nullptr for another name.
inline std::shared_ptr<torch::optim::Optimizer> make_torch_optim(dtl::PyTorchTrialContext& ctx, const Spec& s,
                                                                 const std::vector<torch::Tensor>& a,
                                                                 const std::vector<torch::Tensor>& b,
                                                                 const dtl::OptimizerOptions& o) {
  const auto& k = s.kwargs;
  auto num = [&](const char* name, auto setter) {
    if (k.contains(name)) setter(k.at(name).get<double>());
  };
  auto two = [&](const char* name, auto setter) {
    if (k.contains(name)) setter(std::make_tuple(k.at(name)[0].get<double>(), k.at(name)[1].get<double>()));
  };
  auto yes = [&](const char* name, auto setter) {
    if (k.contains(name)) setter(k.at(name).get<bool>());
  };
  auto wrap = [&]<class O>(typename O::Options opts) -> std::shared_ptr<torch::optim::Optimizer> {
    num("lr", [&](double v) { opts.lr(v); });
    num("eps", [&](double v) {
      if constexpr (requires { opts.eps(v); }) opts.eps(v);
    });
    num("weight_decay", [&](double v) {
      if constexpr (requires { opts.weight_decay(v); }) opts.weight_decay(v);
    });
    yes("maximize", [&](bool v) { opts.maximize(v); });
    if constexpr (requires { opts.betas(); }) two("betas", [&](auto v) { opts.betas(v); });
    if constexpr (requires { opts.decoupled_weight_decay(); })
      yes("decoupled_weight_decay", [&](bool v) { opts.decoupled_weight_decay(v); });
    return wrap_two_groups<O>(ctx, s, a, b, opts, o);
  };
  namespace optim = dtl::optim;
  if (s.optimizer == "Adadelta") {
    optim::AdadeltaOptions opts;
    num("rho", [&](double v) { opts.rho(v); });
    return wrap.template operator()<optim::Adadelta>(opts);
  }
  if (s.optimizer == "Adamax") return wrap.template operator()<optim::Adamax>({});
  if (s.optimizer == "NAdam") {
    optim::NAdamOptions opts;
    num("momentum_decay", [&](double v) { opts.momentum_decay(v); });
    return wrap.template operator()<optim::NAdam>(opts);
  }
  if (s.optimizer == "RAdam") return wrap.template operator()<optim::RAdam>({});
  if (s.optimizer == "ASGD") {
    optim::ASGDOptions opts;
    num("lambd", [&](double v) { opts.lambd(v); });
    num("alpha", [&](double v) { opts.alpha(v); });
    num("t0", [&](double v) { opts.t0(v); });
    return wrap.template operator()<optim::ASGD>(opts);
  }
  if (s.optimizer == "Rprop") {
    optim::RpropOptions opts;
    two("etas", [&](auto v) { opts.etas(v); });
    two("step_sizes", [&](auto v) { opts.step_sizes(v); });
    return wrap.template operator()<optim::Rprop>(opts);
  }
  return nullptr;
}

inline std::shared_ptr<torch::optim::Optimizer> make_optimizer(dtl::PyTorchTrialContext& ctx, const Spec& s,
                                                        const std::vector<torch::Tensor>& params) {
  const std::vector<torch::Tensor> a(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(s.split));
  const std::vector<torch::Tensor> b(params.begin() + static_cast<std::ptrdiff_t>(s.split), params.end());
  dtl::OptimizerOptions o;
  if (s.impl == "fused")
    o.fused = true;
  else if (s.impl == "capturable")
    o.capturable = true;
  else if (s.impl != "default")
    o.foreach = s.impl == "foreach";
  const auto& k = s.kwargs;
  auto wrap = [&]<class O>(auto opts) { return wrap_two_groups<O>(ctx, s, a, b, opts, o); };
  if (auto made = make_torch_optim(ctx, s, a, b, o)) return made;
  if (s.optimizer == "SGD")
    return wrap.template operator()<torch::optim::SGD>(torch::optim::SGDOptions(kw(k, "lr", 0.01))
                                                           .momentum(kw(k, "momentum", 0))
                                                           .dampening(kw(k, "dampening", 0))
                                                           .weight_decay(kw(k, "weight_decay", 0))
                                                           .nesterov(k.value("nesterov", false)));
  auto betas = std::make_tuple(0.9, 0.999);
  if (k.contains("betas")) betas = {k["betas"][0].get<double>(), k["betas"][1].get<double>()};
  auto adam_like = [&](auto opts, double weight_decay) {
    return opts.betas(betas).eps(kw(k, "eps", 1e-8)).weight_decay(kw(k, "weight_decay", weight_decay)).amsgrad(
        k.value("amsgrad", false));
  };
  if (s.optimizer == "Adam")
    return wrap.template operator()<torch::optim::Adam>(adam_like(torch::optim::AdamOptions(kw(k, "lr", 0.001)), 0.0));
  return wrap.template operator()<torch::optim::AdamW>(adam_like(torch::optim::AdamWOptions(kw(k, "lr", 0.001)), 0.01));
}

/// A value as one exact spelling (C's %a; every NaN as "nan"), whichever side wrote it.
inline std::string hex_of(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

inline std::vector<std::string> hexes(const torch::Tensor& t) {
  std::vector<std::string> out;
  auto d = t.detach().to(torch::kCPU, torch::kDouble).contiguous().flatten();
  for (std::int64_t i = 0; i < d.numel(); ++i) out.push_back(hex_of(d.data_ptr<double>()[i]));
  return out;
}

/// Python's float.hex spellings respelled as hex_of's (strtod reads both exactly).
inline void respell(json& j) {
  if (j.is_string())
    j = hex_of(std::strtod(j.get<std::string>().c_str(), nullptr));
  else if (j.is_array() || j.is_object())
    for (auto& v : j) respell(v);
}

/// The C++ side of a spec: the same draws as optim_reference.py, in the same order.
struct Outcome {
  std::vector<torch::Tensor> params;
  std::shared_ptr<torch::optim::Optimizer> opt;
  std::shared_ptr<dtl::GradScaler> scaler;
};

inline Outcome run_dtl(const Spec& s, int steps) {
  auto ctx = dtl::init({.seed = 1, .run_dir = test::temp_run_dir("optim")});  // before the draws: init seeds
  Outcome r;
  torch::manual_seed(s.seed);
  const torch::Device dev(s.device);
  for (std::size_t i = 0; i < s.shapes.size(); ++i)
    r.params.push_back(torch::randn(s.shapes[i], s.dtypes[i] == "float64" ? torch::kDouble : torch::kFloat)
                           .to(dev)
                           .requires_grad_());
  r.opt = make_optimizer(ctx, s, r.params);
  if (s.scaler) r.scaler = std::make_shared<dtl::GradScaler>(dtl::GradScalerOptions{.init_scale = s.scale, .growth_interval = 2});
  for (int step = 0; step < steps; ++step) {
    if (!s.load_from.empty() && step < s.load_at) {  // Python took these steps
      for (const auto& p : r.params) (void)torch::randn(p.sizes(), p.scalar_type());
      continue;
    }
    if (!s.load_from.empty() && step == s.load_at) {
      const auto saved = dtl::detail::load_pickle_archive(s.load_from).toGenericDict();
      const auto values = saved.at("params").toListRef();
      REQUIRE(values.size() == r.params.size());
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < values.size(); ++i) r.params[i].copy_(values[i].toTensor());
      REQUIRE(dtl::detail::load_python_optimizer_state(*r.opt, saved.at("optimizer"), "Python's state_dict"));
    }
    if (!s.save_to.empty() && step == s.save_at) {
      auto saved = c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
      c10::impl::GenericList values(c10::AnyType::get());
      for (const auto& p : r.params) values.push_back(p.detach().cpu().clone());
      saved.insert("params", values);
      saved.insert("optimizer", *dtl::detail::python_optimizer_state(*r.opt));
      dtl::detail::save_pickle_archive(saved, s.save_to);
    }
    torch::Tensor loss;
    std::vector<torch::Tensor> weights;
    for (const auto& p : r.params) weights.push_back(torch::randn(p.sizes(), p.scalar_type()).to(dev));
    for (std::size_t i = 0; i < r.params.size(); ++i) {
      auto term = (r.params[i] * weights[i]).sum();
      loss = i == 0 ? 0 + term : loss + term;
    }
    if (step == s.inf_step) loss = loss * std::numeric_limits<double>::infinity();
    if (r.scaler) {
      r.scaler->scale(loss).backward();
      if (s.unscale_first) r.scaler->unscale_(*r.opt);
      r.scaler->step(*r.opt);
      r.scaler->update();
    } else {
      loss.backward();
      r.opt->step();
    }
    r.opt->zero_grad();
    if (s.halve_lr)
      for (auto& g : r.opt->param_groups()) g.options().set_lr(g.options().get_lr() * 0.5);
  }
  std::filesystem::remove_all(ctx.run_dir());
  return r;
}

/// The optimizer's state as Python's state_dict has it (through the checkpoint's Python layout).
inline json dtl_state(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params) {
  auto py = dtl::detail::python_optimizer_state(opt);
  REQUIRE(py.has_value());
  auto state = py->toGenericDict().at("state").toGenericDict();
  json out = json::array();
  for (std::size_t i = 0; i < params.size(); ++i) {
    json st = json::object();
    const c10::IValue key(static_cast<std::int64_t>(i));
    if (state.contains(key))
      for (const auto& item : state.at(key).toGenericDict()) {
        const auto& v = item.value();
        if (v.isTensor())
          st[item.key().toStringRef()] = hexes(v.toTensor());
        else if (v.isInt() || v.isDouble())
          st[item.key().toStringRef()] = hexes(torch::tensor(v.toScalar().toDouble(), torch::kDouble));
      }
    out.push_back(st);
  }
  return out;
}

/// Python's results for the specs, in order (one interpreter for all of them).
inline std::vector<json> python_results(const std::vector<Spec>& specs) {
  const auto in = test::temp_run_dir("optim_specs");
  std::filesystem::create_directories(in);
  {
    std::ofstream f(in / "specs.jsonl");
    for (const auto& s : specs) f << s.to_json().dump() << "\n";
  }
  auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " " +
                                     test_support::shell_quote(test_support::test_file("optim/optim_reference.py").string()) +
                                     " < " + test_support::shell_quote((in / "specs.jsonl").string()));
  std::filesystem::remove_all(in);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::vector<json> out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') {
      out.push_back(json::parse(line));
      respell(out.back()["params"]);
      respell(out.back()["state"]);
    }
  REQUIRE(out.size() == specs.size());
  return out;
}

inline std::vector<Spec> specs(const std::string& device = "cpu") {
  std::vector<Spec> v;
  for (const char* impl : {"foreach", "fused", "single"}) {
    v.push_back({.name = "SGD", .optimizer = "SGD", .impl = impl, .kwargs = {{"lr", 0.05}}});
    v.push_back({.name = "SGD momentum dampening weight decay", .optimizer = "SGD", .impl = impl,
                 .kwargs = {{"lr", 0.05}, {"momentum", 0.9}, {"dampening", 0.1}, {"weight_decay", 0.01}}});
    v.push_back({.name = "SGD nesterov", .optimizer = "SGD", .impl = impl,
                 .kwargs = {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.001}}});
    v.push_back({.name = "Adam", .optimizer = "Adam", .impl = impl, .kwargs = {{"lr", 0.01}}});
    v.push_back({.name = "Adam amsgrad weight decay", .optimizer = "Adam", .impl = impl,
                 .kwargs = {{"lr", 0.01}, {"amsgrad", true}, {"weight_decay", 0.1}, {"betas", {0.8, 0.99}}, {"eps", 1e-6}}});
    v.push_back({.name = "AdamW", .optimizer = "AdamW", .impl = impl, .kwargs = {{"lr", 0.01}, {"weight_decay", 0.05}}});
    v.push_back({.name = "AdamW amsgrad", .optimizer = "AdamW", .impl = impl,
                 .kwargs = {{"lr", 0.01}, {"weight_decay", 0.05}, {"amsgrad", true}}});
  }
  // A float64 parameter among float32 ones: its own device-and-dtype bucket.
  for (const char* impl : {"foreach", "fused"}) {
    Spec s{.name = "mixed dtypes", .optimizer = "Adam", .impl = impl, .kwargs = {{"lr", 0.01}}};
    s.dtypes = {"float32", "float64", "float32"};
    v.push_back(s);
    s.optimizer = "SGD";
    s.kwargs = {{"lr", 0.05}, {"momentum", 0.9}};
    v.push_back(s);
  }
  // GradScaler: the fused kernel takes the scale and the inf flag (an inf loss at step 2 is
  // skipped on the device: fused Adam's step count goes back); the others unscale and skip.
  for (const char* impl : {"fused", "foreach", "single"})
    for (const char* opt : {"Adam", "AdamW", "SGD"})
      for (bool unscale_first : {false, true}) {
        Spec s{.name = std::string("GradScaler ") + (unscale_first ? "unscale_ first" : ""), .optimizer = opt,
               .impl = impl, .kwargs = {{"lr", 0.01}, {"momentum", std::string(opt) == "SGD" ? 0.9 : 0.0}}};
        if (std::string(opt) != "SGD") s.kwargs.erase("momentum");
        s.scaler = true;
        s.unscale_first = unscale_first;
        s.inf_step = 2;
        v.push_back(s);
      }
  // capturable: the fused kernels reading the learning rate from a float32 tensor, which follows
  // the group's lr as it changes (Python: lr=torch.tensor(lr), filled by the scheduler).
  for (const char* opt : {"SGD", "Adam", "AdamW"})
    for (bool scaler : {false, true}) {
      Spec s{.name = std::string("capturable, lr halved per step") + (scaler ? ", GradScaler" : ""), .optimizer = opt,
             .impl = "capturable", .kwargs = {{"lr", 0.01}}};
      if (std::string(opt) == "SGD") s.kwargs = {{"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 0.01}};
      if (std::string(opt) == "Adam") s.kwargs = {{"lr", 0.01}, {"amsgrad", true}, {"weight_decay", 0.1}};
      s.halve_lr = true;
      s.scaler = scaler;
      s.inf_step = scaler ? 2 : -1;
      v.push_back(s);
    }
  for (auto& s : v) s.device = device;
  return v;
}


}  // namespace optim_test

#endif  // DTL_TESTS_OPTIM_OPTIM_CASES_HPP
