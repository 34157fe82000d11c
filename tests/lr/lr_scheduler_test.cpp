// dtl::lr against torch.optim.lr_scheduler: every scheduler's learning rates (and cycled momenta)
// over 200+ steps, bit for bit, from tests/lr/lr_reference.json (made by lr_reference.py with
// Debian's python3-torch 1.13) or lr_reference_torch2.json (the pinned wheel's torch, for LibTorch
// 2.x); state_dict in that torch's layout; resume mid-sequence; Python loading dtl's state; and
// the constructors' validation errors.
#include "../core/test_trials.hpp"
#include "../support/errors.hpp"
#include "../support/external.hpp"

#include <dtl/checkpoint/ivalue_json.hpp>
#include <dtl/checkpoint/optimizer_state.hpp>
#include <dtl/checkpoint/torch_save.hpp>
#include <dtl/lr_schedulers.hpp>

#include <cmath>
#include <fstream>

namespace {

using nlohmann::json;
using Opt = std::shared_ptr<torch::optim::Optimizer>;
using Sched = std::shared_ptr<dtl::lr::LRScheduler>;

/// The reference of this LibTorch's torch: the sequences agree across versions, the
/// state_dict() layouts do not.
constexpr const char* reference_file = DTL_TORCH_2 ? "lr/lr_reference_torch2.json" : "lr/lr_reference.json";

const json& reference() {
  static const json r = [] {
    std::ifstream in(test_support::test_file(reference_file));
    REQUIRE_MESSAGE(in.good(), "tests/" << reference_file << " is missing");
    return json::parse(in);
  }();
  return r;
}

/// The named functions of lr_reference.py's FUNCTIONS, written the same way.
std::function<double(double)> make_function(const json& spec) {
  const auto fn = spec.at("fn").get<std::string>();
  const double a = spec.at("a").get<double>();
  if (fn == "pow") return [a](double e) { return std::pow(a, e); };
  if (fn == "warmup") return [a](double e) { return std::min(1.0, (e + 1) / a); };
  if (fn == "const") return [a](double) { return a; };
  if (fn == "inv") return [a](double x) { return 1 / (1.0 + a * x); };
  FAIL("unknown function " << fn);
  return {};
}
dtl::lr::LRLambda make_lambda(const json& spec) {
  auto f = make_function(spec);
  return [f](std::int64_t e) { return f(static_cast<double>(e)); };
}

Opt make_optimizer(const json& spec) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  const auto lrs = spec.at("lrs").get<std::vector<double>>();
  for (double lr : lrs) {
    std::vector<torch::Tensor> params{torch::zeros({2}, torch::requires_grad())};
    if (spec.at("type") == "SGD")
      groups.emplace_back(params, std::make_unique<torch::optim::SGDOptions>(
                                      torch::optim::SGDOptions(lr).momentum(spec.value("momentum", 0.0))));
    else
      groups.emplace_back(params, std::make_unique<torch::optim::AdamOptions>(torch::optim::AdamOptions(lr).betas(
                                      std::make_tuple(spec.at("betas")[0].get<double>(), spec.at("betas")[1].get<double>()))));
  }
  if (spec.at("type") == "SGD") return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(lrs[0]));
  return std::make_shared<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(lrs[0]));
}

dtl::lr::PerGroup per_group(const json& v) {
  if (v.is_array()) return dtl::lr::PerGroup(v.get<std::vector<double>>());
  return dtl::lr::PerGroup(v.get<double>());
}

Sched make_scheduler(const Opt& opt, const json& spec) {
  using namespace dtl::lr;
  const auto type = spec.at("type").get<std::string>();
  const json a = spec.value("args", json::object());
  if (type == "SequentialLR") {
    std::vector<Sched> subs;
    for (const auto& s : spec.at("schedulers")) subs.push_back(make_scheduler(opt, s));
    return std::make_shared<SequentialLR>(opt, subs, spec.at("milestones").get<std::vector<std::int64_t>>());
  }
  if (type == "ChainedScheduler") {
    std::vector<Sched> subs;
    for (const auto& s : spec.at("schedulers")) subs.push_back(make_scheduler(opt, s));
    return std::make_shared<ChainedScheduler>(subs);
  }
  if (type == "StepLR") return std::make_shared<StepLR>(opt, a.at("step_size"), a.value("gamma", 0.1));
  if (type == "MultiStepLR")
    return std::make_shared<MultiStepLR>(opt, a.at("milestones").get<std::vector<std::int64_t>>(), a.value("gamma", 0.1));
  if (type == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, a.at("gamma").get<double>());
  if (type == "CosineAnnealingLR") return std::make_shared<CosineAnnealingLR>(opt, a.at("T_max"), a.value("eta_min", 0.0));
  if (type == "CosineAnnealingWarmRestarts")
    return std::make_shared<CosineAnnealingWarmRestarts>(opt, a.at("T_0"), a.value("T_mult", 1), a.value("eta_min", 0.0));
  if (type == "LinearLR")
    return std::make_shared<LinearLR>(opt, a.value("start_factor", 1.0 / 3), a.value("end_factor", 1.0), a.value("total_iters", 5));
  if (type == "ConstantLR") return std::make_shared<ConstantLR>(opt, a.value("factor", 1.0 / 3), a.value("total_iters", 5));
  if (type == "PolynomialLR") return std::make_shared<PolynomialLR>(opt, a.value("total_iters", 5), a.value("power", 1.0));
  if (type == "LambdaLR" || type == "MultiplicativeLR") {
    std::vector<LRLambda> fs;
    if (a.at("lr_lambda").is_array())
      for (const auto& f : a.at("lr_lambda")) fs.push_back(make_lambda(f));
    else
      fs.push_back(make_lambda(a.at("lr_lambda")));
    if (type == "LambdaLR") return std::make_shared<LambdaLR>(opt, fs);
    return std::make_shared<MultiplicativeLR>(opt, fs);
  }
  if (type == "OneCycleLR") {
    OneCycleLROptions o{.max_lr = per_group(a.at("max_lr"))};
    if (a.contains("total_steps")) o.total_steps = a["total_steps"].get<std::int64_t>();
    if (a.contains("epochs")) o.epochs = a["epochs"].get<std::int64_t>();
    if (a.contains("steps_per_epoch")) o.steps_per_epoch = a["steps_per_epoch"].get<std::int64_t>();
    o.pct_start = a.value("pct_start", 0.3);
    o.anneal_strategy = a.value("anneal_strategy", "cos") == "linear" ? AnnealStrategy::linear : AnnealStrategy::cos;
    o.cycle_momentum = a.value("cycle_momentum", true);
    o.div_factor = a.value("div_factor", 25.0);
    o.final_div_factor = a.value("final_div_factor", 1e4);
    o.three_phase = a.value("three_phase", false);
    return std::make_shared<OneCycleLR>(opt, std::move(o));
  }
  if (type == "CyclicLR") {
    CyclicLROptions o{.base_lr = per_group(a.at("base_lr")), .max_lr = per_group(a.at("max_lr"))};
    o.step_size_up = a.value("step_size_up", 2000.0);
    if (a.contains("step_size_down")) o.step_size_down = a["step_size_down"].get<double>();
    const auto mode = a.value("mode", std::string("triangular"));
    o.mode = mode == "triangular2" ? CyclicMode::triangular2 : mode == "exp_range" ? CyclicMode::exp_range : CyclicMode::triangular;
    o.gamma = a.value("gamma", 1.0);
    if (a.contains("scale_fn")) o.scale_fn = make_function(a["scale_fn"]);
    o.scale_mode = a.value("scale_mode", std::string("cycle")) == "iterations" ? ScaleMode::iterations : ScaleMode::cycle;
    o.cycle_momentum = a.value("cycle_momentum", true);
    return std::make_shared<CyclicLR>(opt, std::move(o));
  }
  if (type == "SWALR")  // the strategy as Python spells it: the string constructor
    return std::make_shared<SWALR>(opt, per_group(a.at("swa_lr")), a.value("anneal_epochs", 10),
                                   a.value("anneal_strategy", std::string("cos")));
  FAIL("unknown scheduler " << type);
  return nullptr;
}

std::vector<double> group_lrs(const Opt& opt) {
  std::vector<double> out;
  for (auto& g : opt->param_groups()) out.push_back(g.options().get_lr());
  return out;
}
std::vector<double> group_momenta(const Opt& opt) {
  std::vector<double> out;
  for (auto& g : opt->param_groups()) {
    if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&g.options())) out.push_back(s->momentum());
    if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&g.options())) out.push_back(std::get<0>(a->betas()));
  }
  return out;
}
void set_group_momenta(const Opt& opt, const std::vector<double>& m) {
  auto& gs = opt->param_groups();
  for (std::size_t i = 0; i < gs.size(); ++i) {
    if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&gs[i].options())) s->momentum(m[i]);
    if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&gs[i].options()))
      a->betas(std::make_tuple(m[i], std::get<1>(a->betas())));
  }
}

/// Every key of Python's state is in ours with an equal value (numbers compared as doubles, so
/// Python's int 0 equals dtl's 0.0); values Python cannot express as data (bound methods) only
/// need the key — or, for the two Python-1.13-only callables, nothing.
void check_state(const json& python, const json& ours, const std::string& path) {
  if (python.is_object()) {
    REQUIRE_MESSAGE(ours.is_object(), path << " is not an object in dtl's state");
    for (const auto& [k, v] : python.items()) {
      if (k == "anneal_func" || k == "_scale_fn_ref") continue;  // Python 1.13 pickles methods here; see docs
      INFO(path << "." << k);
      REQUIRE_MESSAGE(ours.contains(k), "dtl's state lacks " << path << "." << k);
      if (v == "<not data>") continue;
      check_state(v, ours[k], path + "." + k);
    }
  } else if (python.is_array()) {
    REQUIRE_MESSAGE(ours.is_array(), path << " is not an array in dtl's state");
    REQUIRE(python.size() == ours.size());
    for (std::size_t i = 0; i < python.size(); ++i) check_state(python[i], ours[i], path + "[" + std::to_string(i) + "]");
  } else if (python.is_number()) {
    INFO(path);
    REQUIRE(ours.is_number());
    CHECK(python.get<double>() == ours.get<double>());
  } else {
    INFO(path);
    CHECK(python == ours);
  }
}

bool cycles_momentum(const json& c) { return c.contains("momenta"); }

}  // namespace

TEST_CASE("every dtl::lr scheduler gives torch's learning rates bit for bit over 200+ steps") {
  const auto& cases = reference().at("cases");
  REQUIRE(cases.size() >= 20);
  for (const auto& c : cases) {
    const auto name = c.at("name").get<std::string>();
    SUBCASE(name.c_str()) {
      auto opt = make_optimizer(c.at("optimizer"));
      auto sched = make_scheduler(opt, c.at("scheduler"));
      const auto steps = c.at("steps").get<int>();
      REQUIRE(steps >= 200);
      const auto& lrs = c.at("lrs");
      int mismatches = 0;
      for (int k = 0; k <= steps; ++k) {
        if (k > 0) sched->step();
        const auto want = lrs[k].get<std::vector<double>>();
        if (group_lrs(opt) != want && mismatches++ < 3)
          FAIL_CHECK("step " << k << ": lr " << json(group_lrs(opt)).dump() << " but torch's " << json(want).dump());
        if (cycles_momentum(c) && group_momenta(opt) != c.at("momenta")[k].get<std::vector<double>>() && mismatches++ < 3)
          FAIL_CHECK("step " << k << ": momentum " << json(group_momenta(opt)).dump() << " but torch's " << c.at("momenta")[k].dump());
      }
      CHECK(mismatches == 0);
      CHECK(sched->get_last_lr() == c.at("last_lr").get<std::vector<double>>());
      check_state(c.at("state"), sched->state_dict(), "state");
    }
  }
}

TEST_CASE("a scheduler resumed from its state_dict mid-sequence continues torch's sequence") {
  for (const auto& c : reference().at("cases")) {
    const auto name = c.at("name").get<std::string>();
    SUBCASE(name.c_str()) {
      const auto steps = c.at("steps").get<int>();
      const int k = steps / 2 + 3;
      auto opt = make_optimizer(c.at("optimizer"));
      auto sched = make_scheduler(opt, c.at("scheduler"));
      for (int i = 0; i < k; ++i) sched->step();
      // Through the checkpoint's own conversion (JSON → pickled IValue → JSON).
      const auto saved = dtl::detail::ivalue_to_json(dtl::detail::json_to_ivalue(sched->state_dict()));

      auto opt2 = make_optimizer(c.at("optimizer"));
      auto sched2 = make_scheduler(opt2, c.at("scheduler"));
      // The optimizer's own state restores its learning rates and momenta, as a checkpoint does.
      const auto lrs_k = c.at("lrs")[k].get<std::vector<double>>();
      for (std::size_t g = 0; g < lrs_k.size(); ++g) opt2->param_groups()[g].options().set_lr(lrs_k[g]);
      if (cycles_momentum(c)) set_group_momenta(opt2, c.at("momenta")[k].get<std::vector<double>>());
      sched2->load_state_dict(saved);
      CHECK(sched2->get_last_lr() == lrs_k);
      for (int i = k + 1; i <= steps; ++i) {
        sched2->step();
        REQUIRE_MESSAGE(group_lrs(opt2) == c.at("lrs")[i].get<std::vector<double>>(), "step " << i);
        if (cycles_momentum(c)) REQUIRE(group_momenta(opt2) == c.at("momenta")[i].get<std::vector<double>>());
      }
    }
  }
}

TEST_CASE("the checked-in reference values are what torch computes today") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why << " (the checked-in values are still compared above)");
    return;
  }
  const auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " " +
                                           test_support::shell_quote(test_support::test_file("lr/lr_reference.py").string()));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const auto now = json::parse(r.output);
  // The reference describes one torch release (the pinned one); another release's layouts may differ.
  auto release = [](const json& j) {
    const auto v = j.at("torch").get<std::string>();
    return v.substr(0, v.find('.', v.find('.') + 1));
  };
  if (release(now) != release(reference())) {
    MESSAGE("skipped: " << test_support::python() << " has torch " << now.at("torch") << ", the reference is of "
                        << reference().at("torch"));
    return;
  }
  CHECK_MESSAGE(now.at("cases") == reference().at("cases"),
                "tests/" << reference_file << " differs from what lr_reference.py prints now: regenerate it");
}

TEST_CASE("Python's schedulers load dtl's state and optimizer param_groups and continue the same sequence") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("dtl_lr_interop_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  json expected = json::array();
  c10::impl::GenericList entries(c10::AnyType::get());
  for (const char* name : {"MultiStepLR repeated milestone", "OneCycleLR cos SGD", "OneCycleLR three-phase linear Adam",
                           "CyclicLR triangular2", "SequentialLR warmup then cosine", "ChainedScheduler linear x multistep",
                           "CosineAnnealingWarmRestarts T_mult=2", "SWALR cos", "SWALR linear per-group swa_lr",
                           "SequentialLR cosine then SWALR"}) {
    const json* c = nullptr;
    for (const auto& x : reference().at("cases"))
      if (x.at("name") == name) c = &x;
    REQUIRE(c != nullptr);
    auto opt = make_optimizer(c->at("optimizer"));
    auto sched = make_scheduler(opt, c->at("scheduler"));
    const int k = 60;
    for (int i = 0; i < k; ++i) sched->step();
    c10::impl::GenericDict e(c10::StringType::get(), c10::AnyType::get());
    e.insert("name", std::string(name));
    e.insert("optimizer", *dtl::detail::python_optimizer_state(*opt));
    e.insert("scheduler", dtl::detail::json_to_ivalue(sched->state_dict()));
    entries.push_back(e);
    json lrs = json::array();
    for (int i = k + 1; i <= k + 40; ++i) {
      sched->step();
      lrs.push_back(group_lrs(opt));
    }
    expected.push_back(lrs);
  }
  const auto file = dir / "schedulers.pth";
  dtl::detail::save_pickle_archive(entries, file, false);
  const auto script = dir / "load.py";
  std::ofstream(script) << R"PY(
import json, sys, importlib.util
spec = importlib.util.spec_from_file_location("ref", sys.argv[2])
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
cases = {c[0]: c for c in ref.CASES}
out = []
for e in __import__("torch").load(sys.argv[1]):
    _, opt_spec, sched_spec, _ = cases[e["name"]]
    opt = ref.make_optimizer(opt_spec)
    sched = ref.make_scheduler(opt, sched_spec)   # as a trial builds it, then Determined loads:
    opt.load_state_dict(e["optimizer"])
    sched.load_state_dict(e["scheduler"])
    lrs = []
    for _ in range(40):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    out.append(lrs)
print(json.dumps(out))
)PY";
  const auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " -W ignore " +
                                           test_support::shell_quote(script.string()) + " " +
                                           test_support::shell_quote(file.string()) + " " +
                                           test_support::shell_quote(test_support::test_file("lr/lr_reference.py").string()));
  fs::remove_all(dir);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const auto got = json::parse(r.output.substr(r.output.find('[')));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("case " << i);
    CHECK(got[i] == expected[i]);
  }
}

TEST_CASE("lr::StepLR gives Python's values bit for bit") {
  // torch 1.13: StepLR(SGD(lr=0.1), step_size=2, gamma=0.7), get_last_lr() after each step().
  const double python[] = {0.1, 0.06999999999999999, 0.06999999999999999, 0.048999999999999995,
                           0.048999999999999995, 0.0343, 0.0343};
  auto p = torch::zeros({1}, torch::requires_grad());
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, 0.1);
  dtl::lr::StepLR sched(opt, 2, 0.7);
  CHECK(sched.last_epoch() == 0);
  for (double want : python) {
    sched.step();
    CHECK(sched.get_last_lr()[0] == want);
    CHECK(opt->param_groups()[0].options().get_lr() == want);
  }
  auto state = sched.state_dict();
  CHECK(state["last_epoch"] == 7);
  dtl::lr::StepLR other(opt, 2, 0.7);
  other.load_state_dict(state);
  CHECK(other.last_epoch() == 7);
  CHECK_THROWS_AS(dtl::lr::StepLR(opt, 0, 0.5), std::invalid_argument);
}

TEST_CASE("dtl::lr constructors refuse what Python refuses, with Python's message") {
  using namespace dtl::lr;
  auto p = torch::zeros({1}, torch::requires_grad());
  auto sgd = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, torch::optim::SGDOptions(0.1).momentum(0.9));
  auto adagrad = std::make_shared<torch::optim::Adagrad>(std::vector<torch::Tensor>{p}, 0.1);
  // `make` throws a std::invalid_argument whose message says `part`.
  auto refuses = [](auto&& make, std::string_view part) {
    const std::string what = test_support::error_of<std::invalid_argument>(make);
    INFO(what);
    CHECK(test_support::contains(what, part));
  };
  refuses([&] { ConstantLR(sgd, 1.5); }, "Constant multiplicative factor expected to be between 0 and 1.");
  refuses([&] { LinearLR(sgd, 0.0); }, "Starting multiplicative factor expected to be greater than 0");
  refuses([&] { LinearLR(sgd, 0.5, 1.5); }, "Ending multiplicative factor expected to be between 0 and 1.");
  refuses([&] { CosineAnnealingWarmRestarts(sgd, 0); }, "Expected positive integer T_0, but got 0");
  refuses([&] { CosineAnnealingWarmRestarts(sgd, 10, 0); }, "Expected integer T_mult >= 1, but got 0");
  refuses([&] { OneCycleLR(sgd, {.max_lr = 0.1}); },
          "You must define either total_steps OR (epochs AND steps_per_epoch)");
  refuses([&] { OneCycleLR(sgd, {.max_lr = 0.1, .total_steps = 0}); },
          "Expected positive integer total_steps, but got 0");
  refuses([&] { OneCycleLR(sgd, {.max_lr = 0.1, .epochs = 3}); },
          "Expected positive integer steps_per_epoch, but got None");
  refuses([&] { OneCycleLR(sgd, {.max_lr = 0.1, .total_steps = 10, .pct_start = 1.5}); },
          "Expected float between 0 and 1 pct_start, but got 1.5");
  refuses([&] { OneCycleLR(sgd, {.max_lr = {0.1, 0.2}, .total_steps = 10}); }, "expected 1 values for max_lr, got 2");
  refuses([&] { OneCycleLR(adagrad, {.max_lr = 0.1, .total_steps = 10}); },
          "optimizer must support momentum with `cycle_momentum` option enabled");
  refuses([&] { CyclicLR(adagrad, {.base_lr = 0.01, .max_lr = 0.1}); },
          "optimizer must support momentum with `cycle_momentum` option enabled");
  refuses([&] { CyclicLR(sgd, {.max_lr = 0.1}); }, "base_lr is required");
  refuses(
      [&] {
        LambdaLR(sgd, std::vector<LRLambda>{[](std::int64_t) { return 1.0; }, [](std::int64_t) { return 1.0; }});
      },
      "Expected 1 lr_lambdas, but got 2");
  auto other = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, 0.1);
  refuses([&] { SequentialLR(sgd, {std::make_shared<ExponentialLR>(other, 0.9)}, {}); },
          "Sequential Schedulers expects all schedulers to belong to the same optimizer");
  refuses([&] { SequentialLR(sgd, {std::make_shared<ExponentialLR>(sgd, 0.9)}, {3}); },
          "expects number of schedulers provided to be one more than the number of milestone points");
  refuses(
      [&] {
        ChainedScheduler({std::make_shared<ExponentialLR>(sgd, 0.9), std::make_shared<ExponentialLR>(other, 0.9)});
      },
      "ChainedScheduler expects all schedulers to belong to the same optimizer");
  refuses([&] { SWALR(sgd, 0.05, 10, "exp"); }, "anneal_strategy must be one of 'cos' or 'linear', instead got exp");
  refuses([&] { SWALR(sgd, 0.05, 10, static_cast<AnnealStrategy>(7)); },
      "anneal_strategy must be one of 'cos' or 'linear', instead got AnnealStrategy(7)");
  refuses([&] { SWALR(sgd, 0.05, -1); }, "anneal_epochs must be equal or greater than 0, got -1");
  refuses([&] { SWALR(sgd, {0.05, 0.01}); },
      "swa_lr must have the same length as optimizer.param_groups: swa_lr has 2 values, optimizer.param_groups has 1");
  refuses([&] { SWALR(sgd, PerGroup{}); }, "swa_lr is required");
  // Stepping OneCycleLR past its total is Python's error too.
  OneCycleLR once(sgd, {.max_lr = 0.1, .total_steps = 3});
  for (int i = 0; i < 3; ++i) once.step();
  refuses([&] { once.step(); }, "Tried to step 5 times. The specified number of total steps is 3");
}

TEST_CASE("SWALR: swa_lr lives in the param groups, and its state restores the anneal strategy") {
  using dtl::lr::AnnealStrategy;
  using dtl::lr::SWALR;
  auto make_opt = [] {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (double lr : {0.1, 0.2})
      groups.emplace_back(std::vector<torch::Tensor>{torch::zeros({2}, torch::requires_grad())},
                          std::make_unique<torch::optim::SGDOptions>(lr));
    return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(0.1));
  };
  auto group_value = [](const c10::IValue& state, std::size_t g, const char* key) {
    return state.toGenericDict().at("param_groups").toList().get(g).toGenericDict().at(key).toDouble();
  };
  auto opt = make_opt();
  SWALR swa(opt, {0.02, 0.01}, 5, AnnealStrategy::linear);
  // Python's param_groups hold swa_lr (beside initial_lr): so does dtl's saved optimizer.
  const auto saved_opt = *dtl::detail::python_optimizer_state(*opt);
  CHECK(group_value(saved_opt, 0, "swa_lr") == 0.02);
  CHECK(group_value(saved_opt, 1, "swa_lr") == 0.01);
  CHECK(group_value(saved_opt, 1, "initial_lr") == 0.2);
  swa.step();
  swa.step();
  // Python 2.x's layout: the strategy by name, never torch 1.13's anneal_func.
  const auto state = swa.state_dict();
  CHECK(state.at("_anneal_strategy") == "linear");
  CHECK(state.at("anneal_epochs") == 5);
  CHECK_FALSE(state.contains("anneal_func"));
  CHECK(state.at("_step_count") == 3);

  // Loaded into a SWALR built with other settings (as a trial whose hparams changed): the state's
  // settings win, as in Python; the optimizer's state brings back the lrs and swa_lrs.
  auto opt2 = make_opt();
  SWALR other(opt2, 0.5, 9, AnnealStrategy::cos);
  for (std::size_t g = 0; g < 2; ++g) opt2->param_groups()[g].options().set_lr(swa.get_last_lr()[g]);
  dtl::detail::load_scheduler_group_keys(opt2, saved_opt);
  other.load_state_dict(dtl::detail::ivalue_to_json(dtl::detail::json_to_ivalue(state)));
  CHECK(other.anneal_strategy() == AnnealStrategy::linear);
  CHECK(other.anneal_epochs() == 5);
  for (int i = 0; i < 6; ++i) {
    swa.step();
    other.step();
    CHECK(other.get_last_lr() == swa.get_last_lr());
    CHECK(group_lrs(opt2) == group_lrs(opt));
  }
  CHECK(swa.get_last_lr() == std::vector<double>{0.02, 0.01});  // annealed, and held there

  // anneal_epochs = 0: swa_lr from construction on (Python's edge case: step counts as 1).
  auto opt3 = make_opt();
  SWALR now(opt3, 0.03, 0);
  CHECK(now.get_last_lr() == std::vector<double>{0.03, 0.03});
  now.step();
  CHECK(group_lrs(opt3) == std::vector<double>{0.03, 0.03});
}

TEST_CASE("momentum cycling drives Adam's beta1 and RMSprop's momentum as SGD's momentum") {
  // The same CyclicLR on three optimizers: the cycled value must be the same sequence, wherever
  // each optimizer keeps it (torch 1.13's CyclicLR refused betas; later PyTorch cycles beta1).
  auto p = torch::zeros({1}, torch::requires_grad());
  auto sgd = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, torch::optim::SGDOptions(0.1).momentum(0.9));
  auto adam = std::make_shared<torch::optim::Adam>(std::vector<torch::Tensor>{p}, torch::optim::AdamOptions(0.1));
  auto rms = std::make_shared<torch::optim::RMSprop>(std::vector<torch::Tensor>{p}, torch::optim::RMSpropOptions(0.1));
  const dtl::lr::CyclicLROptions o{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 4};
  dtl::lr::CyclicLR a(sgd, o), b(adam, o), c(rms, o);
  for (int i = 0; i < 12; ++i) {
    const double m = static_cast<torch::optim::SGDOptions&>(sgd->param_groups()[0].options()).momentum();
    CHECK(std::get<0>(static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options()).betas()) == m);
    CHECK(std::get<1>(static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options()).betas()) == 0.999);
    CHECK(static_cast<torch::optim::RMSpropOptions&>(rms->param_groups()[0].options()).momentum() == m);
    CHECK(a.get_last_lr() == b.get_last_lr());
    a.step();
    b.step();
    c.step();
  }
  CHECK(a.state_dict()["use_beta1"] == false);
  CHECK(b.state_dict()["use_beta1"] == true);
}

TEST_CASE("a step reuses the scheduler's buffers (bench/lr_scheduler_bench counts allocations: none)") {
  // Steps grow no container: get_last_lr() keeps its storage.
  auto p = torch::zeros({1}, torch::requires_grad());
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, torch::optim::SGDOptions(0.1).momentum(0.9));
  dtl::lr::OneCycleLR s(opt, {.max_lr = 0.1, .total_steps = 1000});
  const auto* before = s.get_last_lr().data();
  for (int i = 0; i < 500; ++i) s.step();
  CHECK(s.get_last_lr().data() == before);
}

// --- In the Trainer: Determined's step semantics, gradient aggregation, checkpoint and resume ---

namespace {

using TBatch = std::tuple<torch::Tensor, torch::Tensor>;

// Regression with SGD+momentum under OneCycleLR (momentum cycled) chained after nothing, or a
// warmup+cosine SequentialLR, stepped every batch; every batch reports the lr and momentum in use.
class ScheduledTrial : public dtl::PyTorchTrial<ScheduledTrial> {
 public:
  ScheduledTrial(dtl::PyTorchTrialContext& ctx, bool one_cycle) : ctx_(ctx) {
    torch::manual_seed(11);
    model_ = ctx.wrap_model(torch::nn::Linear(3, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    if (one_cycle) {
      ctx.wrap_lr_scheduler(dtl::lr::OneCycleLR(opt_, {.max_lr = 0.1, .total_steps = 120}), dtl::StepMode::STEP_EVERY_BATCH);
    } else {
      auto warmup = std::make_shared<dtl::lr::LinearLR>(opt_, 0.1, 1.0, 10);
      auto cosine = std::make_shared<dtl::lr::CosineAnnealingLR>(opt_, 50, 0.001);
      ctx.wrap_lr_scheduler(dtl::lr::SequentialLR(opt_, {warmup, cosine}, {10}), dtl::StepMode::STEP_EVERY_BATCH);
    }
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(5);
    x_ = torch::randn({64, 3}, g);
    y_ = (x_.matmul(torch::tensor({0.5, -1.0, 2.0})) + 0.1).unsqueeze(1);
  }
  auto build_training_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 8, .shuffle = true}); }
  auto build_validation_data_loader() { return dtl::DataLoader(dtl::TensorDataset(x_, y_), {.batch_size = 32}); }
  dtl::Metrics train_batch(TBatch& b, std::int64_t, std::int64_t) {
    auto& o = static_cast<torch::optim::SGDOptions&>(opt_->param_groups()[0].options());
    const double lr = o.lr(), momentum = o.momentum();  // in effect for this batch's step
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}, {"lr", lr}, {"momentum", momentum}};
  }
  dtl::Metrics evaluate_batch(TBatch& b) { return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}}; }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::Tensor x_, y_;
};

}  // namespace

TEST_CASE("OneCycleLR and a warmup+cosine SequentialLR under aggregation_frequency 2 resume bit-identically") {
  for (bool one_cycle : {true, false}) {
    CAPTURE(one_cycle);
    const auto base = test::temp_run_dir(one_cycle ? "lr_onecycle" : "lr_sequential");
    auto options = [&](const char* run) {
      auto o = test::init_options("lr_resume", 8, 0.05);
      o.run_dir = base / run;
      o.aggregation_frequency = 2;
      return o;
    };
    // Reported every batch, so each record is one batch's lr and momentum.
    const dtl::FitOptions fit{.max_length = dtl::Batch{100}, .reporting_period = dtl::Batch{1}, .quiet = true};
    torch::Tensor straight_w, resumed_w;
    std::vector<double> stepped_lrs;
    {
      auto ctx = dtl::init(options("straight"));
      ScheduledTrial trial(ctx, one_cycle);
      dtl::Trainer(trial, ctx).fit(fit);
      straight_w = ctx.models()[0]->parameters()[0].detach().clone();
    }
    {
      auto ctx = dtl::init(options("resumed"));
      ScheduledTrial trial(ctx, one_cycle);
      auto first = fit;
      first.max_length = dtl::Batch{50};
      dtl::Trainer(trial, ctx).fit(first);
    }
    {
      auto ctx = dtl::init(options("resumed"));
      ScheduledTrial trial(ctx, one_cycle);
      auto second = fit;
      second.latest_checkpoint = test::latest_checkpoint(base / "resumed");
      dtl::Trainer(trial, ctx).fit(second);
      resumed_w = ctx.models()[0]->parameters()[0].detach().clone();
    }
    const auto straight = test::records(base / "straight", "training");
    REQUIRE(straight.size() == 100);
    CHECK(test::records(base / "resumed", "training") == straight);
    CHECK(torch::equal(resumed_w, straight_w));
    // Determined's STEP_EVERY_BATCH under aggregation: the scheduler steps twice at each optimizer
    // step, so a pair of batches shares one lr and the next pair's is two steps further on.
    auto opt = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())},
                                                   torch::optim::SGDOptions(0.05).momentum(0.9));
    std::shared_ptr<dtl::lr::LRScheduler> ref;
    if (one_cycle) {
      ref = std::make_shared<dtl::lr::OneCycleLR>(opt, dtl::lr::OneCycleLROptions{.max_lr = 0.1, .total_steps = 120});
    } else {
      ref = std::make_shared<dtl::lr::SequentialLR>(
          opt, std::vector<std::shared_ptr<dtl::lr::LRScheduler>>{std::make_shared<dtl::lr::LinearLR>(opt, 0.1, 1.0, 10),
                                                                  std::make_shared<dtl::lr::CosineAnnealingLR>(opt, 50, 0.001)},
          std::vector<std::int64_t>{10});
    }
    for (std::size_t b = 0; b < straight.size(); ++b) {
      INFO("batch " << b);
      CHECK(straight[b]["metrics"]["lr"].get<double>() == ref->get_last_lr()[0]);
      if (b % 2 == 1) {
        ref->step();
        ref->step();
      }
    }
    std::filesystem::remove_all(base);
  }
}

namespace {
// A user's scheduler (docs/lr-schedulers.md): its settings declared once, in `fields`.
class HalvingLR : public dtl::lr::LRScheduler {
 public:
  HalvingLR(std::shared_ptr<torch::optim::Optimizer> opt, std::int64_t period, double floor)
      : LRScheduler(std::move(opt)), period_(period), floor_(floor) {
    start();
  }
  enum class Mode { halve, keep };
  Mode mode = Mode::halve;
  double ratio = 2.5;  // whole numbers are saved as Python's int

 protected:
  void get_lr(std::span<double> lrs) override {
    if (mode == Mode::keep || last_epoch() == 0 || last_epoch() % period_ != 0) return;
    for (auto& lr : lrs) lr = std::max(lr / 2, floor_);
  }
  void fields(dtl::lr::StateFields& f) override {
    f("period", period_)("floor", floor_).number("ratio", ratio);
    f.named("mode", mode, {{Mode::halve, "halve"}, {Mode::keep, "keep"}}, Mode::halve).saved("note", "derived");
  }

 private:
  std::int64_t period_;
  double floor_;
};
}  // namespace

TEST_CASE("a scheduler's declared fields are saved after the base's keys and loaded when present") {
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())},
                                                 torch::optim::SGDOptions(0.8));
  HalvingLR a(opt, 3, 0.05);
  for (int i = 0; i < 7; ++i) a.step();
  a.ratio = 4.0;
  a.mode = HalvingLR::Mode::keep;
  const auto s = a.state_dict();
  CHECK(s.at("period") == 3);
  CHECK(s.at("floor") == 0.05);
  CHECK(s.at("ratio").is_number_integer());
  CHECK(s.at("ratio") == 4);
  CHECK(s.at("mode") == "keep");
  CHECK(s.at("note") == "derived");
  CHECK(s.at("last_epoch") == 7);
  CHECK(s.contains("base_lrs"));

  auto opt2 = std::make_shared<torch::optim::SGD>(
      std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())}, torch::optim::SGDOptions(0.8));
  HalvingLR b(opt2, 1, 0.5);
  b.load_state_dict(s);
  CHECK(b.state_dict() == s);  // period, floor, ratio and mode restored; `note` is derived
  CHECK(b.mode == HalvingLR::Mode::keep);
  CHECK(b.ratio == 4.0);
  // A key the state lacks (or holds as null) keeps the scheduler's own value, as Python's update.
  HalvingLR c(opt2, 5, 0.5);
  auto partial = s;
  partial.erase("period");
  partial["floor"] = nullptr;
  partial["mode"] = "unknown";
  c.load_state_dict(partial);
  CHECK(c.state_dict().at("period") == 5);
  CHECK(c.state_dict().at("floor") == 0.5);
  CHECK(c.mode == HalvingLR::Mode::halve);  // a name it does not list loads as the fallback
}
