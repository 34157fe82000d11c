// dtl — SGD, Adam and AdamW stepping as torch.optim steps them. wrap_optimizer registers one of
// these in place of the LibTorch optimizer (a subclass: the trial's shared_ptr<torch::optim::Adam>
// and LibTorch's state, save and load are unchanged), and each step picks torch.optim's
// implementation (step_options.hpp): single-tensor, foreach or fused.
//
// Single-tensor SGD is LibTorch's own step (its arithmetic is Python's). Single-tensor Adam/AdamW
// is torch.optim's `_single_tensor_adam`: LibTorch 2.x's C++ Adam updates the first moment with
// `exp_avg.mul_(beta1).add_(grad, 1 - beta1)` where Python uses `exp_avg.lerp_(grad, 1 - beta1)`,
// which rounds differently in the last bit, and Python takes the bias correction's square root
// as `bc2 ** 0.5` (C's pow). The multi-tensor paths are multi_tensor.hpp.
//
// This header declares; the optimizers themselves are python_optimizers-inl.hpp, which a trial
// built against libdtl never parses (they are compiled once, into libdtl): a trial that wraps an
// SGD or Adam optimizer instantiates none of their steps.
#ifndef DTL_OPTIM_PYTHON_OPTIMIZERS_HPP
#define DTL_OPTIM_PYTHON_OPTIMIZERS_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/optim/step_options.hpp>

#include <torch/torch.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// torch.optim's checks of foreach / fused / capturable (InvalidExperimentException), for an
/// optimizer named `name` that has multi-tensor steps or not.
DTL_INLINE void check_step_options(const OptimizerOptions& o, const char* name, bool has_multi_tensor);

#if DTL_TORCH_2
/// `base`, moved into dtl's subclass of its type that steps as torch.optim steps it, with
/// `options` checked (python_optimizers-inl.hpp).
DTL_INLINE std::shared_ptr<torch::optim::SGD> python_sgd(torch::optim::SGD&& base, const OptimizerOptions& options);
DTL_INLINE std::shared_ptr<torch::optim::Adam> python_adam(torch::optim::Adam&& base, const OptimizerOptions& options);
DTL_INLINE std::shared_ptr<torch::optim::AdamW> python_adamw(torch::optim::AdamW&& base,
                                                            const OptimizerOptions& options);
#endif

/// What wrap_optimizer(O) registers: torch.optim's implementations for SGD, Adam and AdamW
/// (on LibTorch 1.13, whose Python Adam used mul_ + add_ as LibTorch does, SGD and Adam stay
/// LibTorch's), the optimizer itself otherwise.
template <class O>
std::shared_ptr<O> make_wrapped_optimizer(O&& optimizer, const OptimizerOptions& options) {
#if DTL_TORCH_2
  if constexpr (std::is_same_v<O, torch::optim::Adam>)
    return python_adam(std::move(optimizer), options);
  else if constexpr (std::is_same_v<O, torch::optim::AdamW>)
    return python_adamw(std::move(optimizer), options);
  else if constexpr (std::is_same_v<O, torch::optim::SGD>)
    return python_sgd(std::move(optimizer), options);
  else
#endif
  {
    check_step_options(options, "this optimizer", false);
    return std::make_shared<O>(std::move(optimizer));
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/optim/python_optimizers-inl.hpp>
#endif

#endif  // DTL_OPTIM_PYTHON_OPTIMIZERS_HPP
