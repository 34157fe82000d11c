// dtl — OptimizerOptions: how a wrapped optimizer's step runs, with torch.optim's `foreach` and
// `fused` arguments (the C++ optimizers have neither), and Determined's backward_passes_per_step.
//   opt_ = ctx.wrap_optimizer(torch::optim::Adam(model_->parameters(), 1e-3), {.fused = true});
#ifndef DTL_OPTIM_STEP_OPTIONS_HPP
#define DTL_OPTIM_STEP_OPTIONS_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <optional>

namespace dtl {
inline namespace DTL_ABI {

/// torch.optim's choice of implementation, for SGD, Adam and AdamW:
/// - `foreach` unset (torch.optim's `foreach=None`, the default): multi-tensor `_foreach_*` ops
///   when every parameter of a group is on CUDA, the single-tensor loop otherwise (the CPU);
/// - `foreach = true` / `false`: always the multi-tensor / single-tensor arithmetic;
/// - `fused = true`: ATen's fused kernels (`_fused_sgd_`, `_fused_adam_`, `_fused_adamw_`; CUDA
///   and CPU), which also take GradScaler's scale and inf check, so a scaled step needs no host
///   sync. `fused` and `foreach = true` together are an error, as in Python.
/// - `capturable = true`: torch.optim's `capturable=True` with the learning rate given as a
///   tensor: the fused kernels, reading each group's learning rate from a float32 tensor on the
///   parameters' device (written, one fill, whenever the group's lr has changed; the step itself
///   keeps nothing on the host), so that a CUDA graph can capture the step and replay it with
///   the current learning rate. FitOptions::cuda_graphs sets it on every wrapped SGD, Adam and
///   AdamW. `capturable` with `foreach = true` is an error (dtl's capturable step is the fused one).
/// Each gives torch.optim's numbers for the same choice bit for bit (capturable: torch.optim's
/// `fused=True, capturable=True, lr=torch.tensor(lr)`). Other optimizers step as LibTorch steps
/// them; asking one of them for foreach, fused or capturable is an error.
struct OptimizerOptions {
  std::optional<bool> foreach;
  bool fused = false;
  bool capturable = false;
  /// Determined's wrap_optimizer argument (accepted for parity; gradient aggregation is the
  /// init's `aggregation_frequency`).
  std::int64_t backward_passes_per_step = 1;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_STEP_OPTIONS_HPP
