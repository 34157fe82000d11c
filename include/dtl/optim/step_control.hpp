// dtl — what GradScaler and checkpoints ask of an optimizer dtl wrapped (python_optimizers.hpp):
// whether its step is fused (takes the scale and the inf flag into its kernel), that step, and
// state kept on the device made visible. Reached by a cross-cast from torch::optim::Optimizer.
#ifndef DTL_OPTIM_STEP_CONTROL_HPP
#define DTL_OPTIM_STEP_CONTROL_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/optim/step_options.hpp>

#include <torch/torch.h>

namespace dtl::inline DTL_ABI::detail {

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
  [[nodiscard]] virtual bool supports_amp_scaling() const noexcept { return options().fused; }
  virtual void step_with_amp(const AmpArgs& amp) = 0;
  [[nodiscard]] virtual const OptimizerOptions& options() const noexcept = 0;
  /// State kept on the device made visible to a checkpoint (fused Adam's step counts).
  virtual void sync_state() {}
};

}  // namespace dtl::inline DTL_ABI::detail

#endif  // DTL_OPTIM_STEP_CONTROL_HPP
