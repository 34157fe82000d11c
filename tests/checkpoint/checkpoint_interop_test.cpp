// A dtl checkpoint in Python, and Python weights in dtl (Debian's python3-torch, the same torch
// 1.13): torch.load(weights_only=True) reads state_dict.pth; the model, SGD (momentum, weight
// decay), Adam (amsgrad) and StepLR entries load into their Python classes and take the same next
// step as dtl; the Python-written result warm-starts a dtl model. Skipped, with a visible message,
// where /usr/bin/python3 has no torch.
#include "../core/test_trials.hpp"

#include "../support/external.hpp"

#include <cstdlib>
#include <fstream>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

torch::nn::Sequential make_net() {
  return torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::Tanh(), torch::nn::Linear(4, 2));
}

// Two models with an optimizer each: SGD with momentum, weight decay and a StepLR; Adam (amsgrad).
class InteropTrial : public dtl::PyTorchTrial<InteropTrial> {
 public:
  explicit InteropTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::manual_seed(0);
    a_ = ctx.wrap_model(make_net());
    b_ = ctx.wrap_model(make_net());
    sgd_ = ctx.wrap_optimizer(
        torch::optim::SGD(a_->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3)));
    adam_ = ctx.wrap_optimizer(torch::optim::Adam(b_->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true)));
    ctx.wrap_lr_scheduler(dtl::lr::StepLR(sgd_, 2, 0.5), dtl::StepMode::STEP_EVERY_BATCH);
  }
  auto build_training_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(data(), {.batch_size = 4}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    auto loss = step_loss(std::get<0>(b), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(sgd_);
    ctx_.step_optimizer(adam_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b) { return {{"validation_loss", step_loss(std::get<0>(b), std::get<1>(b))}}; }
  torch::Tensor step_loss(const torch::Tensor& x, const torch::Tensor& y) {
    return torch::mse_loss(a_->forward(x), y) + torch::mse_loss(b_->forward(x), y);
  }
  // One more step on a fixed batch, as the Python side takes it.
  void one_more_step(const torch::Tensor& x, const torch::Tensor& y) {
    sgd_->zero_grad();
    adam_->zero_grad();
    step_loss(x, y).backward();
    sgd_->step();
    adam_->step();
  }
  torch::nn::Sequential a_{nullptr}, b_{nullptr};

 private:
  static dtl::TensorDataset<2> data() {
    auto x = torch::linspace(-1, 1, 48).reshape({16, 3});
    return dtl::TensorDataset(x, torch::stack({x.sum(1), x.prod(1)}, 1));
  }
  dtl::PyTorchTrialContext& ctx_;
  std::shared_ptr<torch::optim::SGD> sgd_;
  std::shared_ptr<torch::optim::Adam> adam_;
};

bool python_has_torch() { return !test_support::python_torch_missing(); }

constexpr const char* kScript = R"PY(
import sys, zipfile, pickletools, torch, torch.nn as nn
ckpt, out = sys.argv[1], sys.argv[2]
try:
    sd = torch.load(ckpt, weights_only=True)      # the default from torch 2.6: must work
except Exception as e:
    # torch 1.13's weights_only has no opcode for a Python float (BINFLOAT, 71), so it refuses every
    # file holding one -- Python's own optimizer state_dicts too. torch >= 2.0 accepts floats. Here,
    # check that floats are the only reason: every global is one weights_only allows.
    assert "Unsupported operand 71" in str(e), e
    allowed = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter"}
    with zipfile.ZipFile(ckpt) as z:
        pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            assert arg in allowed or (arg.startswith("torch ") and arg.endswith("Storage")), arg
    sd = torch.load(ckpt)
    print("torch", torch.__version__, "weights_only refuses floats; globals checked against its allow-list")
assert set(sd) >= {"models_state_dict", "optimizers_state_dict", "lr_schedulers_state_dict", "rng_state", "callbacks"}, sd.keys()
def net(): return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
a, b = net(), net()
a.load_state_dict(sd["models_state_dict"][0]); b.load_state_dict(sd["models_state_dict"][1])
sgd = torch.optim.SGD(a.parameters(), lr=1.0); adam = torch.optim.Adam(b.parameters(), lr=1.0)
sgd.load_state_dict(sd["optimizers_state_dict"][0]); adam.load_state_dict(sd["optimizers_state_dict"][1])
assert sgd.param_groups[0]["momentum"] == 0.9 and sgd.param_groups[0]["weight_decay"] == 1e-3
assert adam.param_groups[0]["amsgrad"] is True and adam.param_groups[0]["betas"] == (0.9, 0.999)
sched = torch.optim.lr_scheduler.StepLR(sgd, 2, 0.5)
sched.load_state_dict(sd["lr_schedulers_state_dict"][0])
assert sched.last_epoch == sd["lr_schedulers_state_dict"][0]["last_epoch"]
assert abs(sgd.param_groups[0]["lr"] - sched.get_last_lr()[0]) < 1e-15
torch.set_rng_state(sd["rng_state"]["cpu_rng_state"])
x = torch.linspace(-1, 1, 48).reshape(16, 3)[:4]
y = torch.stack([x.sum(1), x.prod(1)], 1)
sgd.zero_grad(); adam.zero_grad()
(nn.functional.mse_loss(a(x), y) + nn.functional.mse_loss(b(x), y)).backward()
sgd.step(); adam.step()
torch.save({"a": a.state_dict(), "b": b.state_dict()}, out)
print("python: ok")
)PY";

}  // namespace

TEST_CASE("interop: a dtl checkpoint loads in Python (weights_only) and takes the same next step") {
  if (!python_has_torch()) {
    MESSAGE("SKIPPED: " << *test_support::python_torch_missing() << " (apt-get install python3-torch)");
    return;
  }
  auto opts = test::init_options("interop", 4, 0.1);
  auto ctx = dtl::init(opts);
  InteropTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{5}, .quiet = true});
  const auto ckpt = dtl::detail::Checkpointer(ctx.run_dir() / "checkpoints").resolve("latest");

  const auto script = ctx.run_dir() / "interop.py";
  std::ofstream(script) << kScript;
  const auto out = ctx.run_dir() / "python_next_step.pt";
  const auto log = ctx.run_dir() / "python.log";
  const std::string cmd = test_support::python() + " '" + script.string() + "' '" + (ckpt / "state_dict.pth").string() +
                          "' '" + out.string() + "' >'" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::stringstream py_log;
  py_log << std::ifstream(log).rdbuf();
  INFO("python: " << py_log.str());
  REQUIRE(rc == 0);

  // dtl's own next step from the trained state.
  const auto x = torch::linspace(-1, 1, 48).reshape({16, 3}).slice(0, 0, 4);
  const auto y = torch::stack({x.sum(1), x.prod(1)}, 1);
  trial.one_more_step(x, y);

  // Python's result, read back by dtl (Python -> dtl): a dict of two state dicts.
  const auto saved = dtl::detail::load_pickle_archive(out).toGenericDict();
  auto a = make_net(), b = make_net();
  dtl::load_state_dict(*a, saved.at("a"), true, "python a");
  dtl::load_state_dict(*b, saved.at("b"), true, "python b");
  auto pa = a->parameters(), pb = b->parameters(), ta = trial.a_->parameters(), tb = trial.b_->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(pa[i], ta[i], 1e-6, 1e-7));
    CHECK(torch::allclose(pb[i], tb[i], 1e-6, 1e-7));
  }
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("interop: Python's torch.save(model.state_dict()) warm-starts a dtl model; mismatches name the keys") {
  if (!python_has_torch()) {
    MESSAGE("SKIPPED: " << *test_support::python_torch_missing() << " (apt-get install python3-torch)");
    return;
  }
  const auto dir = test::temp_run_dir("warm-start");
  std::filesystem::create_directories(dir);
  const auto file = dir / "weights.pt";
  const std::string cmd = test_support::python() +
                          " -c \"import torch, torch.nn as nn; torch.manual_seed(4); "
                          "m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)); "
                          "torch.save(m.state_dict(), '" +
                          file.string() +
                          "'); "
                          "print(float(m[0].weight[1, 2]), float(m[2].bias[1]))\" > '" +
                          (dir / "v.txt").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  double w12 = 0, b1 = 0;
  std::ifstream(dir / "v.txt") >> w12 >> b1;
  auto net = make_net();
  dtl::load_state_dict(*net, file);
  CHECK(net[0]->as<torch::nn::Linear>()->weight[1][2].item<double>() == doctest::Approx(w12).epsilon(1e-7));
  CHECK(net[2]->as<torch::nn::Linear>()->bias[1].item<double>() == doctest::Approx(b1).epsilon(1e-7));
  // A different architecture is refused with the names that did not fit, and nothing is half-loaded.
  auto other = torch::nn::Sequential(torch::nn::Linear(3, 5), torch::nn::Tanh(), torch::nn::Linear(5, 2));
  const auto before = other[0]->as<torch::nn::Linear>()->weight.clone();
  CHECK_THROWS_WITH_AS(dtl::load_state_dict(*other, file), doctest::Contains("shape mismatch: 0.weight"),
                       dtl::CheckpointError);
  CHECK(torch::equal(before, other[0]->as<torch::nn::Linear>()->weight));
  // dtl writes the same kind of file back, and Python reads it with weights_only=True.
  dtl::save_state_dict(*net, dir / "back.pt");
  const std::string back =
      test_support::python() + " -c \"import torch; sd = torch.load('" + (dir / "back.pt").string() +
      "', weights_only=True); assert list(sd) == ['0.weight', '0.bias', '2.weight', '2.bias'], list(sd)\"";
  CHECK(std::system(back.c_str()) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a corrupt, truncated or foreign checkpoint is a clear error, and the run's files stay intact") {
  auto opts = test::init_options("corrupt", 4, 0.1);
  std::filesystem::path ckpt;
  {
    auto ctx = dtl::init(opts);
    InteropTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{3}, .quiet = true});
    ckpt = dtl::detail::Checkpointer(ctx.run_dir() / "checkpoints").resolve("latest");
  }
  const auto pth = ckpt / "state_dict.pth";
  const auto size = std::filesystem::file_size(pth);
  const auto backup = ckpt.parent_path() / "state_dict.pth.bak";
  std::filesystem::copy_file(pth, backup);
  auto resume = [&] {
    auto ctx = dtl::init(opts);
    InteropTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{6}, .latest_checkpoint = ckpt, .quiet = true});
  };
  std::filesystem::resize_file(pth, size / 2);
  const std::string pth_name = pth.string();
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains(pth_name.c_str()), dtl::CheckpointError);
  std::filesystem::remove(pth);
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("state_dict.pth is missing"), dtl::CheckpointError);
  // dtl's checkpoint without its trial_state.json is incomplete, not a Determined one (round three:
  // it resumed from trial_state.pkl, silently without the checkpoint's seed).
  std::filesystem::copy_file(backup, pth);
  const auto json_state = ckpt / "trial_state.json";
  const auto json_backup = ckpt.parent_path() / "trial_state.json.bak";
  std::filesystem::rename(json_state, json_backup);
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("is incomplete: trial_state.json is missing (dtl wrote it"),
                       dtl::CheckpointError);
  std::filesystem::rename(json_backup, json_state);
  std::filesystem::remove(pth);
  std::ofstream(pth) << "not a checkpoint";
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("not a torch.save file"), dtl::CheckpointError);
  CHECK_THROWS_WITH_AS(
      [&] {
        auto ctx = dtl::init(opts);
        InteropTrial trial(ctx);
        dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{6}, .latest_checkpoint = ckpt / "nope", .quiet = true});
      }(),
      doctest::Contains("does not exist"), dtl::CheckpointError);
  // One flipped byte in a record (here data.pkl, in a key's text) is refused by its CRC-32,
  // naming the record; PyTorch's reader would load it silently.
  std::filesystem::remove(pth);
  std::filesystem::copy_file(backup, pth);
  {
    auto bytes = dtl::detail::read_file(pth);
    const auto at = bytes.find("optimizers_state_dict");
    REQUIRE(at != std::string::npos);
    bytes[at + 3] = static_cast<char>(bytes[at + 3] ^ 0x20);  // 'i' -> 'I': still a valid pickle
    std::ofstream(pth, std::ios::binary | std::ios::trunc) << bytes;
  }
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("the record data.pkl is corrupt: its CRC-32 is "), dtl::CheckpointError);
  // metadata.json is checked too, naming the field.
  std::filesystem::remove(pth);
  std::filesystem::copy_file(backup, pth);
  const auto meta_path = ckpt / "metadata.json";
  const auto meta_text = dtl::detail::read_file(meta_path);
  auto meta = nlohmann::json::parse(meta_text);
  meta["steps_completed"] = 2;
  std::ofstream(meta_path) << meta.dump();
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("metadata.json's steps_completed (2) differs from trial_state.json's batches_trained (3)"),
                       dtl::CheckpointError);
  meta["steps_completed"] = "three";
  std::ofstream(meta_path) << meta.dump();
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("steps_completed is missing or not a count"), dtl::CheckpointError);
  std::ofstream(meta_path) << "{broken";
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("metadata.json is not a JSON object"), dtl::CheckpointError);
  meta = nlohmann::json::parse(meta_text);
  meta["framework"] = 5;
  std::ofstream(meta_path) << meta.dump();
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("metadata.json: framework is 5, not \"torch-<version>\""),
                       dtl::CheckpointError);
  std::ofstream(meta_path) << meta_text;
  // So is load_data.json, where a checkpoint has one.
  const auto load_data_path = ckpt / "load_data.json";
  const auto load_data_text = dtl::detail::read_file(load_data_path);
  std::ofstream(load_data_path) << "{broken";
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains((load_data_path.string() + " is not a JSON object").c_str()), dtl::CheckpointError);
  auto load_data = nlohmann::json::parse(load_data_text);
  load_data["hparams"] = "lr=0.1";
  std::ofstream(load_data_path) << load_data.dump();
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("load_data.json: hparams is \"lr=0.1\", not a mapping"),
                       dtl::CheckpointError);
  std::ofstream(load_data_path) << load_data_text;
  // And trial_state.json's per-rank states, naming the file and the field.
  const auto state_path = ckpt / "trial_state.json";
  const auto state_text = dtl::detail::read_file(state_path);
  for (const auto& [ranks, message] : std::vector<std::pair<nlohmann::json, std::string>>{
           {5, "trial_state.json: ranks is 5, not a list with one entry per rank"},
           {nlohmann::json::array({7}), "trial_state.json: ranks[0] is 7, not an object"},
           {nlohmann::json::array({{{"cpu_rng_state", "zz"}}}), "ranks[0].cpu_rng_state is not a hex string of whole bytes"},
           {nlohmann::json::array({{{"cpu_rng_state", "00ff"}}}), "ranks[0].cpu_rng_state holds 2 bytes, but this LibTorch's CPU generator state has "},
           {nlohmann::json::array({{{"data_position", "x"}}}), "ranks[0].data_position is \"x\", not an object"}}) {
    auto state = nlohmann::json::parse(state_text);
    state["ranks"] = ranks;
    std::ofstream(state_path) << state.dump();
    CHECK_THROWS_WITH_AS(resume(), doctest::Contains(message.c_str()), dtl::CheckpointError);
  }
  std::ofstream(state_path) << state_text;
  // The zip's small records (the archive's version) are CRC-checked like the data.
  {
    auto bytes = dtl::detail::read_file(pth);
    std::size_t at = 0, data = std::string::npos;
    const auto u16 = [&](std::size_t i) {
      return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i])) |
             static_cast<std::size_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    };
    while ((at = bytes.find("PK\x03\x04", at)) != std::string::npos) {  // each record's local header
      const std::string name = bytes.substr(at + 30, u16(at + 26));
      if (name.ends_with("/version") && name.find(".data") == std::string::npos) {
        data = at + 30 + u16(at + 26) + u16(at + 28);
        break;
      }
      at += 4;
    }
    REQUIRE(data != std::string::npos);
    bytes[data] = static_cast<char>(bytes[data] ^ 0x01);  // '3' -> '2': still a version the reader takes
    std::ofstream(pth, std::ios::binary | std::ios::trunc) << bytes;
  }
  CHECK_THROWS_WITH_AS(resume(), doctest::Contains("the record version is corrupt: its CRC-32 is "), dtl::CheckpointError);
  std::filesystem::remove(pth);
  std::filesystem::copy_file(backup, pth);
  // The intact files resume.
  CHECK_NOTHROW(resume());
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("load_trial_from_checkpoint_path rebuilds the trial with its weights, for inference") {
  auto opts = test::init_options("load-trial", 4, 0.1);
  std::vector<torch::Tensor> trained;
  std::filesystem::path ckpt;
  {
    auto ctx = dtl::init(opts);
    InteropTrial trial(ctx);
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{4}, .quiet = true});
    for (const auto& p : trial.a_->parameters()) trained.push_back(p.detach().clone());
    ckpt = dtl::detail::Checkpointer(ctx.run_dir() / "checkpoints").resolve("latest");
  }
  auto loaded = dtl::load_trial_from_checkpoint_path<InteropTrial>(ckpt);
  CHECK(loaded.context->get_hparam<double>("learning_rate") == 0.1);
  CHECK_FALSE(loaded->a_->is_training());
  const auto params = loaded->a_->parameters();
  REQUIRE(params.size() == trained.size());
  for (std::size_t i = 0; i < params.size(); ++i) CHECK(torch::equal(params[i], trained[i]));
  CHECK_THROWS_AS(dtl::load_trial_from_checkpoint_path<InteropTrial>(ckpt / "missing"), dtl::CheckpointError);
  std::filesystem::remove_all(opts.run_dir.value());
}
