// dtl — LR schedulers: Determined's StepMode, what wrap_lr_scheduler accepts, and PyTorch's
// scheduler family that LibTorch 1.13 lacks (dtl::lr, one header per kind under dtl/lr/), with
// Python's exact update rules and state_dict layout.
#ifndef DTL_LR_SCHEDULERS_HPP
#define DTL_LR_SCHEDULERS_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/composite.hpp>
#include <dtl/lr/cosine.hpp>
#include <dtl/lr/cyclic.hpp>
#include <dtl/lr/decay.hpp>
#include <dtl/lr/lambda.hpp>
#include <dtl/lr/base.hpp>
#include <dtl/lr/swa.hpp>

namespace dtl {
inline namespace DTL_ABI {

/// When the Trainer steps a wrapped scheduler (Determined's `LRScheduler.StepMode`).
enum class StepMode {
  every_epoch = 1,           ///< after the last batch of each epoch
  every_batch = 2,           ///< after every batch (deferred to the optimizer step when aggregating)
  manual = 3,                ///< never; the trial calls step() itself
  every_optimizer_step = 4,  ///< after batches on which the optimizer steps
  // Determined's spellings, so a ported trial reads the same.
  STEP_EVERY_EPOCH = every_epoch,
  STEP_EVERY_BATCH = every_batch,
  MANUAL_STEP = manual,
  STEP_EVERY_OPTIMIZER_STEP = every_optimizer_step,
};

/// Anything with `step()` can be wrapped: dtl::lr schedulers, torch::optim::StepLR, your own.
template <class S>
concept LRSchedulerLike = requires(S& s) {
  s.step();
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_SCHEDULERS_HPP
