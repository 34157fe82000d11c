// dtl — what a checkpoint saves and restores of a trial, lent to storage by the trial's context
// (PyTorchTrialContext::checkpoint_state()). Storage knows modules, optimizers, state dicts and
// bytes; it does not know trials or contexts.
#ifndef DTL_CHECKPOINT_TRIAL_STATE_REFS_HPP
#define DTL_CHECKPOINT_TRIAL_STATE_REFS_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct TrialStateRefs {
  /// A type-erased LR scheduler: its state as JSON (Python's layout), when it has one.
  struct LRScheduler {
    void* object = nullptr;
    nlohmann::json (*save)(const void*) = nullptr;  // null: no state dtl can save
    void (*load)(void*, const nlohmann::json&) = nullptr;
  };
  std::vector<std::shared_ptr<torch::nn::Module>> models;            ///< in wrap order
  std::vector<std::shared_ptr<torch::optim::Optimizer>> optimizers;  ///< in wrap order
  std::vector<LRScheduler> lr_schedulers;                            ///< in wrap order
  /// Other state saved under its own key of `state_dict.pth` (Determined's `scaler_state_dict`,
  /// `amp_state`): a checkpoint without the key loads with a warning, as Determined's does.
  struct Entry {
    std::string key;
    void* object = nullptr;
    nlohmann::json (*save)(const void*) = nullptr;
    void (*load)(void*, const nlohmann::json&) = nullptr;
  };
  std::vector<Entry> extra;
  nlohmann::json hparams;
  nlohmann::json experiment_config;  ///< null when there is none
  std::uint64_t trial_seed = 0;
  /// The CUDA device whose generator is saved as `gpu_rng_state` (detail::rng_cuda_device).
  std::optional<torch::Device> cuda_rng_device;
  nlohmann::json load_data_notes;  ///< extra keys for load_data.json (e.g. hyperparameters changed at resume)
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_TRIAL_STATE_REFS_HPP
