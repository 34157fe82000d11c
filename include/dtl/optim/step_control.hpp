// dtl — what GradScaler and checkpoints ask of an optimizer dtl wrapped (python_optimizers-inl.hpp):
// whether its step is fused (takes the scale and the inf flag into its kernel), that step, and
// state kept on the device made visible. Reached by a cross-cast from torch::optim::Optimizer.
#ifndef DTL_OPTIM_STEP_CONTROL_HPP
#define DTL_OPTIM_STEP_CONTROL_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/optim/step_options.hpp>

#include <torch/torch.h>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// GradScaler's part in a fused step: the scale to divide the gradients by (undefined when they
/// are unscaled already) and the inf/NaN flag that makes the kernel skip the step.
struct AmpArgs {
  torch::Tensor grad_scale;
  torch::Tensor found_inf;
};

class StepControl {
 public:
  virtual ~StepControl() = default;
  /// torch.optim's `_step_supports_amp_scaling`: the fused step takes GradScaler's scale and inf
  /// flag itself, and skips on the device (no host sync).
  [[nodiscard]] virtual bool supports_amp_scaling() const noexcept {
    return options().fused || options().capturable;  // capturable is fused too
  }
  virtual void step_with_amp(const AmpArgs& amp) = 0;
  [[nodiscard]] virtual const OptimizerOptions& options() const noexcept = 0;
  /// State kept on the device made visible to a checkpoint (fused Adam's step counts).
  virtual void sync_state() {}
  /// Turns `capturable` on (FitOptions::cuda_graphs); an error when the options forbid it.
  virtual void make_capturable() = 0;
  /// capturable: writes each group's learning rate to its device tensor where the group's lr has
  /// changed since it was written (before a CUDA graph's replay: the replay reads the tensor).
  virtual void refresh_device_lr() {}
};

/// True while the Trainer captures train_batch into a CUDA graph (on this thread): what a step
/// does on the host then happens once, never at a replay, so a capturable step refuses to write
/// a changed learning rate (the replays would keep writing that value).
inline bool& cuda_graph_capturing() noexcept {
  thread_local bool capturing = false;
  return capturing;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_STEP_CONTROL_HPP
