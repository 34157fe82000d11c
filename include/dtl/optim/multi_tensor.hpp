// dtl — the multi-tensor arithmetic of torch.optim (2.x) for SGD and Adam/AdamW: its `foreach`
// path (`_foreach_*` ops over all tensors of one device and dtype: a handful of kernel launches
// per step instead of ~8 per tensor) and its `fused` path (ATen's `_fused_sgd_`, `_fused_adam_`,
// `_fused_adamw_`, one launch per step, taking GradScaler's scale and inf flag). The same ops in
// the same order as torch/optim/sgd.py `_multi_tensor_sgd` / `_fused_sgd` and adam.py
// `_multi_tensor_adam` / `_fused_adam` (foreach non-capturable; not maximizing), so the numbers are
// Python's bit for bit. The lists are the caller's and reused from step to step (no allocation
// once they have grown), one call per device-and-dtype bucket.
#ifndef DTL_OPTIM_MULTI_TENSOR_HPP
#define DTL_OPTIM_MULTI_TENSOR_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/errors.hpp>
#include <dtl/optim/step_control.hpp>

#include <torch/torch.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
};

/// One device-and-dtype bucket of an SGD group. `momentum_buffers[i]` undefined: no buffer yet.
struct SgdLists {
  std::vector<torch::Tensor> params, grads, momentum_buffers;
  void clear() {
    params.clear();
    grads.clear();
    momentum_buffers.clear();
  }
};

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;
};

/// One device-and-dtype bucket of an Adam group; `step_counts` are the steps after this one's
/// increment (the foreach path's host-side `step.item()`), `steps` the fused path's float32 step
/// tensors on the parameters' device.
struct AdamLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  std::vector<double> step_counts;
  std::vector<c10::Scalar> scalars;  // reused
  std::vector<torch::Tensor> repeated;  // reused: found_inf once per tensor
  void clear() {
    params.clear();
    grads.clear();
    exp_avgs.clear();
    exp_avg_sqs.clear();
    max_exp_avg_sqs.clear();
    steps.clear();
    step_counts.clear();
  }
};

#if DTL_TORCH_2

/// A fused kernel's optional argument: empty for an undefined tensor.
inline std::optional<torch::Tensor> optional_tensor(const torch::Tensor& t) {
  return t.defined() ? std::optional<torch::Tensor>(t) : std::nullopt;
}

/// torch.optim `_multi_tensor_sgd`. New momentum buffers are written into `l.momentum_buffers`
/// for the caller to keep in the optimizer's state.
inline void foreach_sgd(SgdLists& l, const SgdHyper& h) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads = h.weight_decay != 0 ? at::_foreach_add(l.grads, l.params, h.weight_decay)
                                                         : l.grads;  // handles: nesterov adds into p.grad, as Python
  if (h.momentum != 0) {
    bool all = true;
    for (const auto& b : l.momentum_buffers) all = all && b.defined();
    if (all) {
      at::_foreach_mul_(l.momentum_buffers, h.momentum);
      at::_foreach_add_(l.momentum_buffers, grads, 1 - h.dampening);
    } else {
      for (std::size_t i = 0; i < l.momentum_buffers.size(); ++i) {
        auto& b = l.momentum_buffers[i];
        if (!b.defined())
          b = grads[i].detach().clone();
        else
          b.mul_(h.momentum).add_(grads[i], 1 - h.dampening);
      }
    }
    if (h.nesterov)
      at::_foreach_add_(grads, l.momentum_buffers, h.momentum);
    else
      grads = l.momentum_buffers;
  }
  at::_foreach_add_(l.params, grads, -h.lr);
}

/// torch.optim `_fused_sgd`, at `lr` (the hyperparameter's double, or capturable's float32
/// tensor on the parameters' device). A buffer that does not exist yet is created as zeros, not
/// `empty_like` as Python does: the kernel overwrites it on a first step, and on a first step
/// GradScaler skips (inf/NaN) Python keeps uninitialized memory as the momentum, dtl zeros.
template <class Lr>
void fused_sgd(SgdLists& l, const SgdHyper& h, const Lr& lr, const AmpArgs& amp) {
  torch::NoGradGuard no_grad;
  const auto scale = optional_tensor(amp.grad_scale);
  const auto inf = optional_tensor(amp.found_inf);
  if (h.momentum == 0) {
    at::_fused_sgd_(l.params, l.grads, {}, h.weight_decay, h.momentum, lr, h.dampening, h.nesterov,
                    /*maximize=*/false, /*is_first_step=*/false, scale, inf);
    return;
  }
  bool first = true;
  for (const auto& b : l.momentum_buffers) first = first && !b.defined();
  if (!first) {
    for (std::size_t i = 0; i < l.momentum_buffers.size(); ++i)
      if (!l.momentum_buffers[i].defined()) l.momentum_buffers[i] = torch::zeros_like(l.grads[i]);
  } else {
    for (std::size_t i = 0; i < l.momentum_buffers.size(); ++i) l.momentum_buffers[i] = torch::zeros_like(l.grads[i]);
  }
  at::_fused_sgd_(l.params, l.grads, l.momentum_buffers, h.weight_decay, h.momentum, lr, h.dampening, h.nesterov,
                  /*maximize=*/false, first, scale, inf);
}

/// torch.optim `_multi_tensor_adam` (capturable=False): bias corrections per tensor on the host,
/// from the step counts, in Python's float arithmetic.
inline void foreach_adam(AdamLists& l, const AdamHyper& h) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads = l.grads;
  if (h.weight_decay != 0) {
    if (h.decoupled)
      at::_foreach_mul_(l.params, 1 - h.lr * h.weight_decay);
    else
      grads = at::_foreach_add(l.grads, l.params, h.weight_decay);
  }
  at::_foreach_lerp_(l.exp_avgs, grads, 1 - h.beta1);
  at::_foreach_mul_(l.exp_avg_sqs, h.beta2);
  at::_foreach_addcmul_(l.exp_avg_sqs, grads, grads, 1 - h.beta2);
  grads.clear();
  std::vector<torch::Tensor> denom;
  if (h.amsgrad) {
    at::_foreach_maximum_(l.max_exp_avg_sqs, l.exp_avg_sqs);
    denom = at::_foreach_sqrt(l.max_exp_avg_sqs);
  } else {
    denom = at::_foreach_sqrt(l.exp_avg_sqs);
  }
  l.scalars.clear();
  for (const double step : l.step_counts) l.scalars.emplace_back(std::pow(1 - std::pow(h.beta2, step), 0.5));
  at::_foreach_div_(denom, l.scalars);
  at::_foreach_add_(denom, h.eps);
  l.scalars.clear();
  for (const double step : l.step_counts) l.scalars.emplace_back((h.lr / (1 - std::pow(h.beta1, step))) * -1);
  at::_foreach_addcdiv_(l.params, l.exp_avgs, denom, l.scalars);
}

/// torch.optim `_fused_adam` at `lr` (a double, or capturable's device tensor): the step tensors
/// are incremented before the kernel, and taken back where GradScaler found an inf/NaN (the
/// kernel then leaves everything else untouched).
template <class Lr>
void fused_adam(AdamLists& l, const AdamHyper& h, const Lr& lr, const AmpArgs& amp) {
  torch::NoGradGuard no_grad;
  const auto scale = optional_tensor(amp.grad_scale);
  const auto inf = optional_tensor(amp.found_inf);
  at::_foreach_add_(l.steps, 1);
  if (h.decoupled)
    at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps, lr, h.beta1, h.beta2,
                      h.weight_decay, h.eps, h.amsgrad, /*maximize=*/false, scale, inf);
  else
    at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps, lr, h.beta1, h.beta2,
                     h.weight_decay, h.eps, h.amsgrad, /*maximize=*/false, scale, inf);
  if (amp.found_inf.defined()) {
    l.repeated.assign(l.steps.size(), amp.found_inf.reshape({}));  // the steps are 0-d
    at::_foreach_sub_(l.steps, l.repeated);
  }
}

#endif  // DTL_TORCH_2

/// capturable's learning rates: one float32 tensor per parameter group and device, refilled
/// (one fill, no host sync) when the group's lr differs from the value last written. A write
/// while a CUDA graph is being captured is refused: the replays would repeat it.
class DeviceLearningRates {
 public:
  const torch::Tensor& of(std::size_t group, const torch::Device& device, double lr) {
    for (auto& s : slots_)
      if (s.group == group && s.device == device) {
        if (s.written != lr) write(s, lr);
        return s.tensor;
      }
    slots_.push_back({group, device, torch::empty({}, torch::TensorOptions().dtype(torch::kFloat).device(device)), 0});
    write(slots_.back(), lr);
    return slots_.back().tensor;
  }
  /// Writes every group's current lr where it changed.
  void refresh(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
    for (auto& s : slots_)
      if (const double lr = groups[s.group].options().get_lr(); s.written != lr) write(s, lr);
  }

 private:
  struct Slot {
    std::size_t group;
    torch::Device device;
    torch::Tensor tensor;
    double written;
  };
  static void write(Slot& s, double lr) {
    if (cuda_graph_capturing())
      throw InvalidExperimentException(
          "dtl: the learning rate of parameter group " + std::to_string(s.group) +
          " changed inside train_batch while it was captured into a CUDA graph: a replay cannot repeat a host-side "
          "change; change learning rates in an LR scheduler (wrap_lr_scheduler) or a callback, or train without "
          "FitOptions::cuda_graphs");
    torch::NoGradGuard no_grad;
    s.tensor.fill_(lr);
    s.written = lr;
  }
  std::vector<Slot> slots_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_MULTI_TENSOR_HPP
