// dtl — load_trial_from_checkpoint_path: a trial rebuilt from a checkpoint, for inference or
// analysis (Determined's `det.pytorch.load_trial_from_checkpoint_path`). The context gets the
// checkpoint's hyperparameters and trial seed; the trial is constructed as in training; then its
// models, optimizers and LR schedulers are restored. Nothing trains and nothing is written.
#ifndef DTL_LOAD_TRIAL_HPP
#define DTL_LOAD_TRIAL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/context.hpp>
#include <dtl/errors.hpp>
#include <dtl/init.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {

/// A trial and the context it references, kept alive together.
template <class Trial>
struct LoadedTrial {
  std::unique_ptr<PyTorchTrialContext> context;
  std::unique_ptr<Trial> trial;
  Trial& operator*() const noexcept { return *trial; }
  Trial* operator->() const noexcept { return trial.get(); }
};

/// Builds `Trial(context, trial_args...)` from the checkpoint directory `path` and restores its
/// state. `hparams` (optional) override the checkpoint's, as Determined's `CheckpointLoadContext`.
///   auto loaded = dtl::load_trial_from_checkpoint_path<MnistTrial>("runs/x/checkpoints/<uuid>");
///   loaded->model()->eval();
template <class Trial, class... Args>
LoadedTrial<Trial> load_trial_from_checkpoint_path(const std::filesystem::path& path, Args&&... trial_args) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path))
    throw CheckpointError("dtl: load_trial_from_checkpoint_path: " + path.string() + " is not a checkpoint directory");
  nlohmann::json load_data, trial_state;
  try {
    load_data = nlohmann::json::parse(detail::read_file(path / "load_data.json"));
    trial_state = nlohmann::json::parse(detail::read_file(path / "trial_state.json"));
  } catch (const std::exception& e) {
    throw CheckpointError("dtl: load_trial_from_checkpoint_path: " + path.string() +
                          " lacks a readable load_data.json / trial_state.json: " + e.what());
  }
  InitOptions opts;
  opts.hparams = load_data.value("hparams", nlohmann::json::object());
  if (trial_state.contains("trial_seed")) opts.seed = trial_state["trial_seed"].template get<std::uint64_t>();
  // The run directory the checkpoint belongs to (<run>/checkpoints/<uuid>); it is not written to.
  opts.run_dir = path.parent_path().filename() == "checkpoints" ? path.parent_path().parent_path() : path;
  opts.lock_run_dir = false;  // a reader: the run may be training beside it
  auto setup = detail::make_setup(std::move(opts), nullptr);
  torch::manual_seed(setup.trial_seed);
  LoadedTrial<Trial> out;
  out.context = std::make_unique<PyTorchTrialContext>(std::move(setup));
  out.trial = std::make_unique<Trial>(*out.context, std::forward<Args>(trial_args)...);
  detail::Checkpointer(path.parent_path()).load(out.context->checkpoint_state(), path);
  for (const auto& m : out.context->models()) m->eval();
  return out;
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LOAD_TRIAL_HPP
