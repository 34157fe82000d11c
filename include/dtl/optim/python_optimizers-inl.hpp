// dtl — the definitions of <dtl/optim/python_optimizers.hpp>; see detail/compiled_lib.hpp. The
// subclasses of LibTorch's SGD, Adam and AdamW that wrap_optimizer registers, stepping as
// torch.optim does: single-tensor, foreach or fused (multi_tensor.hpp).
#ifndef DTL_OPTIM_PYTHON_OPTIMIZERS_INL_HPP
#define DTL_OPTIM_PYTHON_OPTIMIZERS_INL_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/errors.hpp>
#include <dtl/optim/multi_tensor.hpp>
#include <dtl/optim/python_optimizers.hpp>
#include <dtl/optim/step_control.hpp>
#include <dtl/optim/step_options.hpp>

#include <torch/torch.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Which implementation a group's step uses: torch.optim's `_default_to_fused_or_foreach`.
enum class StepKind { single_tensor, foreach, fused };
[[nodiscard]] inline StepKind step_kind(const OptimizerOptions& o, const std::vector<torch::Tensor>& params) {
  if (o.fused || o.capturable) return StepKind::fused;
  if (o.foreach) return *o.foreach ? StepKind::foreach : StepKind::single_tensor;
  for (const auto& p : params)
    if (!p.is_cuda()) return StepKind::single_tensor;
  return StepKind::foreach;
}

DTL_INLINE void check_step_options(const OptimizerOptions& o, const char* name, bool has_multi_tensor) {
  const bool foreach = o.foreach && *o.foreach;
  if (o.fused && foreach)
    throw InvalidExperimentException(std::string("dtl: wrap_optimizer(") + name +
                                     "): fused and foreach cannot both be true (as in torch.optim); choose one");
  if (o.capturable && foreach)
    throw InvalidExperimentException(std::string("dtl: wrap_optimizer(") + name +
                                     "): dtl's capturable step is the fused kernel, so capturable cannot be combined "
                                     "with foreach = true; leave foreach unset");
#if !DTL_TORCH_2  // first: on 1.13 every optimizer comes here as one without multi-tensor steps
  if (o.fused || foreach || o.capturable)
    throw InvalidExperimentException(std::string("dtl: wrap_optimizer(") + name +
                                     "): foreach, fused and capturable steps need LibTorch 2.x (this is 1.13); "
                                     "leave OptimizerOptions.foreach, .fused and .capturable unset");
#endif
  if (!has_multi_tensor && (o.fused || foreach || o.capturable))
    throw InvalidExperimentException(std::string("dtl: wrap_optimizer(") + name +
                                     "): foreach, fused and capturable steps exist for SGD, Adam and AdamW only; "
                                     "leave OptimizerOptions.foreach, .fused and .capturable unset for this optimizer");
}

/// `o` with capturable on (FitOptions::cuda_graphs), checked as wrap_optimizer checks options.
[[nodiscard]] inline OptimizerOptions capturable(OptimizerOptions o, const char* name) {
  o.capturable = true;
  check_step_options(o, name, true);
  return o;
}

/// Buckets of one group's parameters by device and dtype, in first-seen order (torch.optim's
/// `_group_tensors_by_device_and_dtype`), reused from step to step.
template <class Lists>
class Buckets {
 public:
  Lists& of(const torch::Tensor& p) {
    for (std::size_t i = 0; i < used_; ++i)
      if (keys_[i].first == p.device() && keys_[i].second == p.scalar_type()) return lists_[i];
    if (used_ == lists_.size()) {
      lists_.emplace_back();
      keys_.emplace_back(p.device(), p.scalar_type());
    } else {
      keys_[used_] = {p.device(), p.scalar_type()};
    }
    lists_[used_].clear();
    return lists_[used_++];
  }
  void reset() noexcept { used_ = 0; }
  [[nodiscard]] std::size_t size() const noexcept { return used_; }
  Lists& operator[](std::size_t i) noexcept { return lists_[i]; }

 private:
  std::vector<Lists> lists_;
  std::vector<std::pair<torch::Device, torch::ScalarType>> keys_;
  std::size_t used_ = 0;
};

inline void check_fused_param(const torch::Tensor& p, const char* name) {
  if (!p.is_floating_point() || !(p.is_cuda() || p.is_cpu()))
    throw InvalidExperimentException(std::string("dtl: ") + name +
                                     " with fused=true needs floating-point parameters on CUDA or the CPU (got " +
                                     std::string(c10::toString(p.scalar_type())) + " on " + p.device().str() +
                                     "); use foreach instead");
}

/// SGD: LibTorch's step for single-tensor, torch.optim's for foreach and fused.
class PythonSGD : public torch::optim::SGD, public StepControl {
 public:
  PythonSGD(torch::optim::SGD&& base, OptimizerOptions o) : torch::optim::SGD(std::move(base)), o_(o) {
    check_step_options(o_, "SGD", true);
  }
  torch::Tensor step(LossClosure closure = nullptr) override { return run(std::move(closure), nullptr); }
  void step_with_amp(const AmpArgs& amp) override { run(nullptr, &amp); }
  [[nodiscard]] const OptimizerOptions& options() const noexcept override { return o_; }
  void make_capturable() override { o_ = capturable(o_, "SGD"); }
  void refresh_device_lr() override { lrs_.refresh(param_groups()); }

 private:
  torch::Tensor run(LossClosure closure, const AmpArgs* amp) {
    if (!o_.fused && !o_.capturable && !(o_.foreach && *o_.foreach) && all_single_tensor()) {
      if (amp) throw std::logic_error("dtl: an AMP-scaled step on an optimizer that is not fused");
      return torch::optim::SGD::step(std::move(closure));
    }
#if DTL_TORCH_2
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (std::size_t g = 0; g < param_groups().size(); ++g) {
      auto& group = param_groups()[g];
      const auto& opt = static_cast<const torch::optim::SGDOptions&>(group.options());
      const SgdHyper h{opt.lr(), opt.momentum(), opt.dampening(), opt.weight_decay(), opt.nesterov()};
      with_grad_.clear();
      for (auto& p : group.params())
        if (p.grad().defined()) with_grad_.push_back(p);
      if (with_grad_.empty()) continue;
      const auto kind = step_kind(o_, with_grad_);
      if (kind == StepKind::single_tensor) {  // the default on a group not all on CUDA
        single_tensor_group(group);
        continue;
      }
      buckets_.reset();
      for (auto& p : with_grad_) {
        TORCH_CHECK(!p.grad().is_sparse(), "dtl: SGD's foreach and fused steps do not take sparse gradients");
        if (kind == StepKind::fused) check_fused_param(p, "SGD");
        auto& l = buckets_.of(p);
        l.params.push_back(p);
        l.grads.push_back(p.grad());
        auto it = state().find(compat::optimizer_state_key(p));
        l.momentum_buffers.push_back(
            it != state().end()
                ? static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer()
                : torch::Tensor());
      }
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        auto& l = buckets_[b];
        if (o_.capturable)
          fused_sgd(l, h, lrs_.of(g, l.params.front().device(), h.lr), amp ? *amp : AmpArgs{});
        else if (kind == StepKind::fused)
          fused_sgd(l, h, h.lr, amp ? *amp : AmpArgs{});
        else
          foreach_sgd(l, h);
        if (h.momentum == 0) continue;
        for (std::size_t i = 0; i < l.params.size(); ++i) {
          auto& slot = state()[compat::optimizer_state_key(l.params[i])];
          if (!slot) slot = std::make_unique<torch::optim::SGDParamState>();
          static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer(l.momentum_buffers[i]);
        }
      }
    }
    return loss;
#else
    (void)amp;
    return torch::optim::SGD::step(std::move(closure));
#endif
  }

  /// Default options and no group wholly on CUDA: LibTorch's own step, untouched.
  [[nodiscard]] bool all_single_tensor() const {
    for (const auto& group : param_groups()) {
      bool any = false, all_cuda = true;
      for (const auto& p : group.params())
        if (p.grad().defined()) {
          any = true;
          all_cuda = all_cuda && p.is_cuda();
        }
      if (any && all_cuda) return false;
    }
    return true;
  }

  /// The per-tensor arithmetic of LibTorch's SGD::step (Python's _single_tensor_sgd) on one group:
  /// the default for a group not wholly on CUDA when another group is.
  void single_tensor_group(torch::optim::OptimizerParamGroup& group) {
    const auto& opt = static_cast<const torch::optim::SGDOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto d_p = p.grad().data();
      if (opt.weight_decay() != 0) d_p = d_p.add(p.data(), opt.weight_decay());
      if (opt.momentum() != 0) {
        torch::Tensor buf;
        auto& slot = state()[compat::optimizer_state_key(p)];
        if (!slot) {
          buf = torch::clone(d_p).detach();
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(buf);
          slot = std::move(fresh);
        } else {
          buf = static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer();
          buf.mul_(opt.momentum()).add_(d_p, 1 - opt.dampening());
        }
        if (opt.nesterov())
          d_p = d_p.add(buf, opt.momentum());
        else
          d_p = buf;
      }
      p.data().add_(d_p, -1 * opt.lr());
    }
  }

  OptimizerOptions o_;
  std::vector<torch::Tensor> with_grad_;
  Buckets<SgdLists> buckets_;
  DeviceLearningRates lrs_;
};

/// Fused Adam's step count: a float32 tensor on the parameter's device (the kernel reads it
/// there), beside LibTorch's host count, which sync_state makes equal to it for checkpoints.
template <class ParamState>
struct FusedAdamState : ParamState {
  explicit FusedAdamState(const ParamState& s) : ParamState(s) {}
  torch::Tensor device_step;
};

/// Base is torch::optim::Adam or AdamW; Decoupled: AdamW's weight decay (Python's
/// `decoupled_weight_decay`: `param.mul_(1 - lr * weight_decay)` before the moments).
template <class Base, class Options, class ParamState, bool Decoupled>
class PythonAdamOf : public Base, public StepControl {
 public:
  explicit PythonAdamOf(Base&& base, OptimizerOptions o = {}) : Base(std::move(base)), o_(o) {
    check_step_options(o_, Decoupled ? "AdamW" : "Adam", true);
  }

  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    return run(std::move(closure), nullptr);
  }
  void step_with_amp(const AmpArgs& amp) override { run(nullptr, &amp); }
  [[nodiscard]] const OptimizerOptions& options() const noexcept override { return o_; }
  void make_capturable() override { o_ = capturable(o_, Decoupled ? "AdamW" : "Adam"); }
  void refresh_device_lr() override { lrs_.refresh(this->param_groups()); }

  void sync_state() override {
    for (auto& [key, slot] : this->state())
      if (auto* f = dynamic_cast<FusedAdamState<ParamState>*>(slot.get()); f && f->device_step.defined())
        f->step(static_cast<std::int64_t>(f->device_step.template item<float>()));
  }

 private:
  torch::Tensor run(torch::optim::Optimizer::LossClosure closure, const AmpArgs* amp) {
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (std::size_t g = 0; g < this->param_groups().size(); ++g) {
      auto& group = this->param_groups()[g];
      const auto& o = static_cast<const Options&>(group.options());
      const auto [beta1, beta2] = o.betas();
      const AdamHyper h{o.lr(), beta1, beta2, o.eps(), o.weight_decay(), o.amsgrad(), Decoupled};
      with_grad_.clear();
      for (auto& p : group.params())
        if (p.grad().defined()) with_grad_.push_back(p);
      if (with_grad_.empty()) continue;
      const auto kind = step_kind(o_, with_grad_);
      if (kind == StepKind::single_tensor) {
        if (amp) throw std::logic_error("dtl: an AMP-scaled step on an optimizer that is not fused");
        for (auto& p : with_grad_) single_tensor(p, h);
        continue;
      }
#if DTL_TORCH_2
      buckets_.reset();
      for (auto& p : with_grad_) {
        TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
        if (kind == StepKind::fused) check_fused_param(p, Decoupled ? "AdamW" : "Adam");
        auto& st = state_of(p, h);
        auto& l = buckets_.of(p);
        l.params.push_back(p);
        l.grads.push_back(p.grad());
        l.exp_avgs.push_back(st.exp_avg());
        l.exp_avg_sqs.push_back(st.exp_avg_sq());
        if (h.amsgrad) l.max_exp_avg_sqs.push_back(st.max_exp_avg_sq());
        st.step(st.step() + 1);
        if (kind == StepKind::fused)
          l.steps.push_back(device_step(st, p));
        else
          l.step_counts.push_back(static_cast<double>(st.step()));
      }
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        if (o_.capturable)
          fused_adam(buckets_[b], h, lrs_.of(g, buckets_[b].params.front().device(), h.lr), amp ? *amp : AmpArgs{});
        else if (kind == StepKind::fused)
          fused_adam(buckets_[b], h, h.lr, amp ? *amp : AmpArgs{});
        else
          foreach_adam(buckets_[b], h);
      }
#endif
    }
    return loss;
  }

  ParamState& state_of(const torch::Tensor& p, const AdamHyper& h) {
    auto& slot = this->state()[compat::optimizer_state_key(p)];
    if (!slot) {
      auto fresh = std::make_unique<ParamState>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      if (h.amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      slot = std::move(fresh);
    }
    return static_cast<ParamState&>(*slot);
  }

  /// The fused path's step tensor (already counting this step): made from the host count the
  /// first time, and after a checkpoint load replaced the state.
  torch::Tensor device_step(ParamState& st, const torch::Tensor& p) {
    auto& slot = this->state()[compat::optimizer_state_key(p)];
    auto* f = dynamic_cast<FusedAdamState<ParamState>*>(slot.get());
    if (!f) {
      auto fused = std::make_unique<FusedAdamState<ParamState>>(st);
      // The kernel path increments it before the kernel, as Python: start one below.
      fused->device_step = torch::full({}, static_cast<float>(st.step() - 1),
                                       torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      f = fused.get();
      slot = std::move(fused);
    }
    return f->device_step;
  }

  /// torch.optim `_single_tensor_adam`.
  void single_tensor(torch::Tensor& p, const AdamHyper& h) {
    TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
    auto grad = p.grad();
    auto& st = state_of(p, h);
    st.step(st.step() + 1);
    if (h.weight_decay != 0) {
      if constexpr (Decoupled)
        p.mul_(1 - h.lr * h.weight_decay);
      else
        grad = grad.add(p, h.weight_decay);
    }
    auto& exp_avg = st.exp_avg();
    auto& exp_avg_sq = st.exp_avg_sq();
    exp_avg.lerp_(grad, 1 - h.beta1);
    exp_avg_sq.mul_(h.beta2).addcmul_(grad, grad, 1 - h.beta2);
    // Python: step = step_t.item(); beta ** step, bc2 ** 0.5 (floats: C's pow).
    const auto step = static_cast<double>(st.step());
    const double bias_correction1 = 1 - std::pow(h.beta1, step);
    const double bias_correction2 = 1 - std::pow(h.beta2, step);
    const double step_size = h.lr / bias_correction1;
    const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
    torch::Tensor denom;
    if (h.amsgrad) {
      auto& max_sq = st.max_exp_avg_sq();
      torch::maximum_out(max_sq, max_sq, exp_avg_sq);
      denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
    } else {
      denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
    }
    p.addcdiv_(exp_avg, denom, -step_size);
  }

  OptimizerOptions o_;
  std::vector<torch::Tensor> with_grad_;
  Buckets<AdamLists> buckets_;
  DeviceLearningRates lrs_;
};

using PythonAdam = PythonAdamOf<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState, false>;
using PythonAdamW =
    PythonAdamOf<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>;

#if DTL_TORCH_2
DTL_INLINE std::shared_ptr<torch::optim::SGD> python_sgd(torch::optim::SGD&& base, const OptimizerOptions& options) {
  return std::make_shared<PythonSGD>(std::move(base), options);
}
DTL_INLINE std::shared_ptr<torch::optim::Adam> python_adam(torch::optim::Adam&& base, const OptimizerOptions& options) {
  return std::make_shared<PythonAdam>(std::move(base), options);
}
DTL_INLINE std::shared_ptr<torch::optim::AdamW> python_adamw(torch::optim::AdamW&& base,
                                                            const OptimizerOptions& options) {
  return std::make_shared<PythonAdamW>(std::move(base), options);
}
#endif

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_PYTHON_OPTIMIZERS_INL_HPP
