// dtl — Adam and AdamW with torch.optim's arithmetic. wrap_optimizer(torch::optim::Adam(...))
// registers one of these, so a trial's Adam gives Python's numbers bit for bit (the real
// Determined as the oracle, tests/oracle/). LibTorch 2.x's C++ Adam/AdamW update the first moment
// with `exp_avg.mul_(beta1).add_(grad, 1 - beta1)`; Python's torch.optim (2.x, its single-tensor
// path, the CPU default) uses `exp_avg.lerp_(grad, 1 - beta1)`, which rounds differently in the
// last bit, and takes the bias correction's square root as `bc2 ** 0.5` (C's pow). The state is
// LibTorch's own (AdamParamState / AdamWParamState), so checkpoints and save/load are unchanged.
#ifndef DTL_DETAIL_PYTHON_ADAM_HPP
#define DTL_DETAIL_PYTHON_ADAM_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <tuple>
#include <utility>

namespace dtl::inline DTL_ABI::detail {

/// Base is torch::optim::Adam or AdamW; Decoupled: AdamW's weight decay (Python's
/// `decoupled_weight_decay`: `param.mul_(1 - lr * weight_decay)` before the moments).
template <class Base, class Options, class ParamState, bool Decoupled>
class PythonAdamOf : public Base {
 public:
  explicit PythonAdamOf(Base&& base) : Base(std::move(base)) {}

  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : this->param_groups()) {
      const auto& o = static_cast<const Options&>(group.options());
      const double lr = o.lr();
      const auto [beta1, beta2] = o.betas();
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
        auto grad = p.grad();
        auto& slot = this->state()[p.unsafeGetTensorImpl()];
        if (!slot) {
          auto fresh = std::make_unique<ParamState>();
          fresh->step(0);
          fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
          fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
          if (o.amsgrad()) fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
          slot = std::move(fresh);
        }
        auto& st = static_cast<ParamState&>(*slot);
        st.step(st.step() + 1);
        if (o.weight_decay() != 0) {
          if constexpr (Decoupled)
            p.mul_(1 - lr * o.weight_decay());
          else
            grad = grad.add(p, o.weight_decay());
        }
        auto& exp_avg = st.exp_avg();
        auto& exp_avg_sq = st.exp_avg_sq();
        exp_avg.lerp_(grad, 1 - beta1);
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        // Python: step = step_t.item(); beta ** step, bc2 ** 0.5 (floats: C's pow).
        const auto step = static_cast<double>(st.step());
        const double bias_correction1 = 1 - std::pow(beta1, step);
        const double bias_correction2 = 1 - std::pow(beta2, step);
        const double step_size = lr / bias_correction1;
        const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
        torch::Tensor denom;
        if (o.amsgrad()) {
          auto& max_sq = st.max_exp_avg_sq();
          torch::maximum_out(max_sq, max_sq, exp_avg_sq);
          denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(o.eps());
        } else {
          denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(o.eps());
        }
        p.addcdiv_(exp_avg, denom, -step_size);
      }
    }
    return loss;
  }
};

using PythonAdam = PythonAdamOf<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState, false>;
using PythonAdamW =
    PythonAdamOf<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>;

/// What wrap_optimizer(O) registers: Python's arithmetic for LibTorch 2.x's Adam and AdamW (1.13's
/// Python Adam used mul_ + add_, as LibTorch does), the optimizer itself otherwise.
template <class O>
std::shared_ptr<O> make_wrapped_optimizer(O&& optimizer) {
#if TORCH_VERSION_MAJOR >= 2
  if constexpr (std::is_same_v<O, torch::optim::Adam>)
    return std::make_shared<PythonAdam>(std::move(optimizer));
  else if constexpr (std::is_same_v<O, torch::optim::AdamW>)
    return std::make_shared<PythonAdamW>(std::move(optimizer));
  else
#endif
    return std::make_shared<O>(std::move(optimizer));
}

}  // namespace dtl::inline DTL_ABI::detail

#endif  // DTL_DETAIL_PYTHON_ADAM_HPP
