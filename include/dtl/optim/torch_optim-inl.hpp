// dtl — the non-template definitions of <dtl/optim/torch_optim.hpp>; see detail/compiled_lib.hpp.
// Each update is torch.optim's `_single_tensor_<name>` (torch 2.x) op for op: the same ATen ops
// with the same Python-float operands (C++ doubles), Python's float pow as std::pow, `x ** 0.5`
// as std::pow(x, 0.5), `float / tensor` as `tensor.reciprocal() * float` (Tensor.__rtruediv__),
// and the float32 0-d state tensors (step, mu_product, eta, mu) as floats updated in float32.
#ifndef DTL_OPTIM_TORCH_OPTIM_INL_HPP
#define DTL_OPTIM_TORCH_OPTIM_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/optim/torch_optim.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dtl {
inline namespace DTL_ABI {
namespace optim {

// Out of line, so that a trial's translation unit does not instantiate the options' virtual
// functions (clone and the rest) wherever it includes this header.
DTL_INLINE AdadeltaOptions::AdadeltaOptions(double lr) : lr_(lr) {}
DTL_INLINE AdamaxOptions::AdamaxOptions(double lr) : lr_(lr) {}
DTL_INLINE NAdamOptions::NAdamOptions(double lr) : lr_(lr) {}
DTL_INLINE RAdamOptions::RAdamOptions(double lr) : lr_(lr) {}
DTL_INLINE ASGDOptions::ASGDOptions(double lr) : lr_(lr) {}
DTL_INLINE RpropOptions::RpropOptions(double lr) : lr_(lr) {}

namespace impl {

/// torch.optim's constructor checks, as its ValueError messages word them.
inline void require(bool ok, const char* optimizer, const char* what, double value) {
  if (ok) return;
  std::ostringstream m;
  m << "dtl: " << optimizer << ": invalid " << what << ": " << value << " (torch.optim refuses it too)";
  throw InvalidExperimentException(m.str());
}
inline void check_betas(const std::tuple<double, double>& b, const char* optimizer) {
  require(0.0 <= std::get<0>(b) && std::get<0>(b) < 1.0, optimizer, "beta parameter at index 0", std::get<0>(b));
  require(0.0 <= std::get<1>(b) && std::get<1>(b) < 1.0, optimizer, "beta parameter at index 1", std::get<1>(b));
}
/// The keys every torch 2.x group has after `maximize`: dtl's step is torch.optim's single-tensor
/// one, not capturable, not differentiable.
inline void single_tensor_keys(python_layout::Fields& f) {
  f.none("foreach").fixed("capturable", false).fixed("differentiable", false);
}
inline torch::Tensor zeros(const torch::Tensor& p) { return torch::zeros_like(p, at::MemoryFormat::Preserve); }

}  // namespace impl


// ---------------------------------------------------------------------------------------- Adadelta

DTL_INLINE void Adadelta::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  impl::require(0.0 <= o.rho() && o.rho() <= 1.0, name, "rho value", o.rho());
  impl::require(0.0 <= o.eps(), name, "epsilon value", o.eps());
  impl::require(0.0 <= o.weight_decay(), name, "weight_decay value", o.weight_decay());
}
DTL_INLINE std::unique_ptr<Adadelta::State> Adadelta::init_state(const torch::Tensor& p, const Options&) {
  auto s = std::make_unique<State>();
  s->square_avg(impl::zeros(p)).acc_delta(impl::zeros(p));
  return s;
}
DTL_INLINE void Adadelta::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  s.step(s.step() + 1.0f);
  if (o.maximize()) grad = -grad;
  if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
  const double rho = o.rho();
  s.square_avg().mul_(rho).addcmul_(grad, grad, 1 - rho);
  auto std_dev = s.square_avg().add(o.eps()).sqrt_();
  auto delta = s.acc_delta().add(o.eps()).sqrt_();
  delta.div_(std_dev).mul_(grad);
  s.acc_delta().mul_(rho).addcmul_(delta, delta, 1 - rho);
  p.add_(delta, -o.lr());
}
DTL_INLINE void Adadelta::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("rho", o.rho())("eps", o.eps())("weight_decay", o.weight_decay())("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void Adadelta::state_fields(Fields& f, State& s) {
  f("step", s.step())("square_avg", s.square_avg())("acc_delta", s.acc_delta());
}

// ------------------------------------------------------------------------------------------ Adamax

DTL_INLINE void Adamax::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  impl::require(0.0 <= o.eps(), name, "epsilon value", o.eps());
  impl::check_betas(o.betas(), name);
  impl::require(0.0 <= o.weight_decay(), name, "weight_decay value", o.weight_decay());
}
DTL_INLINE std::unique_ptr<Adamax::State> Adamax::init_state(const torch::Tensor& p, const Options&) {
  auto s = std::make_unique<State>();
  s->exp_avg(impl::zeros(p)).exp_inf(impl::zeros(p));
  return s;
}
DTL_INLINE void Adamax::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  const auto [beta1, beta2] = o.betas();
  if (o.maximize()) grad = -grad;
  s.step(s.step() + 1.0f);
  if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
  s.exp_avg().lerp_(grad, 1 - beta1);
  auto& exp_inf = s.exp_inf();
  exp_inf.mul_(beta2);
  at::maximum_out(exp_inf, exp_inf, grad.abs().add_(o.eps()));
  const double bias_correction = 1 - std::pow(beta1, static_cast<double>(s.step()));
  const double clr = o.lr() / bias_correction;
  p.addcdiv_(s.exp_avg(), exp_inf, -clr);
}
DTL_INLINE void Adamax::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("betas", o.betas())("eps", o.eps())("weight_decay", o.weight_decay())("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void Adamax::state_fields(Fields& f, State& s) {
  f("step", s.step())("exp_avg", s.exp_avg())("exp_inf", s.exp_inf());
}

// ------------------------------------------------------------------------------------------- NAdam

DTL_INLINE void NAdam::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  impl::require(0.0 <= o.eps(), name, "epsilon value", o.eps());
  impl::check_betas(o.betas(), name);
  impl::require(0.0 <= o.weight_decay(), name, "weight_decay value", o.weight_decay());
  impl::require(0.0 <= o.momentum_decay(), name, "momentum_decay value", o.momentum_decay());
}
DTL_INLINE std::unique_ptr<NAdam::State> NAdam::init_state(const torch::Tensor& p, const Options&) {
  auto s = std::make_unique<State>();
  s->exp_avg(impl::zeros(p)).exp_avg_sq(impl::zeros(p));
  return s;
}
DTL_INLINE void NAdam::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  const auto [beta1, beta2] = o.betas();
  const double lr = o.lr();
  if (o.maximize()) grad = -grad;
  s.step(s.step() + 1.0f);
  const double step = s.step();
  const double bias_correction2 = 1 - std::pow(beta2, step);
  if (o.weight_decay() != 0) {
    if (o.decoupled_weight_decay())
      p.mul_(1 - lr * o.weight_decay());
    else
      grad = grad.add(p, o.weight_decay());
  }
  const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * o.momentum_decay()));
  const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay()));
  s.mu_product(s.mu_product() * static_cast<float>(mu));  // `mu_product *= mu` on a float32 tensor
  s.exp_avg().lerp_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  auto denom = s.exp_avg_sq().div(bias_correction2).sqrt();
  const double mu_product = s.mu_product();
  const double mu_product_next = mu_product * mu_next;
  denom.add_(o.eps());
  p.addcdiv_(grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product));
  p.addcdiv_(s.exp_avg(), denom, (-lr * mu_next) / (1.0 - mu_product_next));
}
DTL_INLINE void NAdam::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("betas", o.betas())("eps", o.eps())("weight_decay", o.weight_decay());
  f("momentum_decay", o.momentum_decay())("decoupled_weight_decay", o.decoupled_weight_decay());
  f("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void NAdam::state_fields(Fields& f, State& s) {
  f("step", s.step())("mu_product", s.mu_product())("exp_avg", s.exp_avg())("exp_avg_sq", s.exp_avg_sq());
}

// ------------------------------------------------------------------------------------------- RAdam

DTL_INLINE void RAdam::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  impl::require(0.0 <= o.eps(), name, "epsilon value", o.eps());
  impl::check_betas(o.betas(), name);
  impl::require(0.0 <= o.weight_decay(), name, "weight_decay value", o.weight_decay());
}
DTL_INLINE std::unique_ptr<RAdam::State> RAdam::init_state(const torch::Tensor& p, const Options&) {
  auto s = std::make_unique<State>();
  s->exp_avg(impl::zeros(p)).exp_avg_sq(impl::zeros(p));
  return s;
}
DTL_INLINE void RAdam::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  const auto [beta1, beta2] = o.betas();
  const double lr = o.lr();
  if (o.maximize()) grad = -grad;
  s.step(s.step() + 1.0f);
  const double step = s.step();
  if (o.weight_decay() != 0) {
    if (o.decoupled_weight_decay())
      p.mul_(1 - lr * o.weight_decay());
    else
      grad = grad.add(p, o.weight_decay());
  }
  s.exp_avg().lerp_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  auto bias_corrected_exp_avg = s.exp_avg() / bias_correction1;
  const double rho_inf = 2 / (1 - beta2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
  if (rho_t > 5.0) {
    const double rect =
        std::pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.5);
    auto adaptive_lr = s.exp_avg_sq().sqrt().add_(o.eps()).reciprocal() * std::pow(bias_correction2, 0.5);
    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, -1.0);
  } else {
    p.add_(bias_corrected_exp_avg * lr, -1.0);
  }
}
DTL_INLINE void RAdam::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("betas", o.betas())("eps", o.eps())("weight_decay", o.weight_decay());
  f("decoupled_weight_decay", o.decoupled_weight_decay())("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void RAdam::state_fields(Fields& f, State& s) {
  f("step", s.step())("exp_avg", s.exp_avg())("exp_avg_sq", s.exp_avg_sq());
}

// -------------------------------------------------------------------------------------------- ASGD

DTL_INLINE void ASGD::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  impl::require(0.0 <= o.lambd(), name, "lambd value", o.lambd());
  impl::require(0.0 <= o.alpha(), name, "alpha value", o.alpha());
  impl::require(0.0 <= o.weight_decay(), name, "weight_decay value", o.weight_decay());
}
DTL_INLINE std::unique_ptr<ASGD::State> ASGD::init_state(const torch::Tensor& p, const Options& o) {
  auto s = std::make_unique<State>();
  s->eta(static_cast<float>(o.lr())).ax(impl::zeros(p));
  return s;
}
DTL_INLINE void ASGD::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  const double lr = o.lr(), lambd = o.lambd();
  if (o.maximize()) grad = -grad;
  s.step(s.step() + 1.0f);
  if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
  const double eta = s.eta();
  p.mul_(1 - lambd * eta);
  p.add_(grad, -eta);
  auto& ax = s.ax();
  if (s.mu() != 1)
    ax.add_(p.sub(ax).mul_(static_cast<double>(s.mu())));
  else
    ax.copy_(p);
  const double step = s.step();
  s.eta(static_cast<float>(lr / std::pow(1 + lambd * lr * step, o.alpha())));
  s.mu(static_cast<float>(1 / std::max(1.0, step - o.t0())));
}
DTL_INLINE void ASGD::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("lambd", o.lambd())("alpha", o.alpha())("t0", o.t0())("weight_decay", o.weight_decay());
  f("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void ASGD::state_fields(Fields& f, State& s) {
  f("step", s.step())("eta", s.eta())("mu", s.mu())("ax", s.ax());
}

// ------------------------------------------------------------------------------------------- Rprop

DTL_INLINE void Rprop::check(const Options& o) {
  impl::require(0.0 <= o.lr(), name, "learning rate", o.lr());
  const auto [minus, plus] = o.etas();
  impl::require(0.0 < minus && minus < 1.0, name, "eta values (etaminus must be in (0, 1))", minus);
  impl::require(1.0 < plus, name, "eta values (etaplus must be > 1)", plus);
}
DTL_INLINE std::unique_ptr<Rprop::State> Rprop::init_state(const torch::Tensor& p, const Options& o) {
  auto s = std::make_unique<State>();
  s->prev(impl::zeros(p)).step_size(torch::full_like(p, o.lr(), at::MemoryFormat::Preserve));
  return s;
}
DTL_INLINE void Rprop::update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o) {
  const auto [etaminus, etaplus] = o.etas();
  const auto [step_size_min, step_size_max] = o.step_sizes();
  if (o.maximize()) grad = -grad;
  s.step(s.step() + 1.0f);
  auto sign = grad.mul(s.prev()).sign();
  sign.masked_fill_(sign.gt(0), etaplus);
  sign.masked_fill_(sign.lt(0), etaminus);
  sign.masked_fill_(sign.eq(0), 1);
  s.step_size().mul_(sign).clamp_(step_size_min, step_size_max);
  grad = grad.clone(at::MemoryFormat::Preserve);
  grad.masked_fill_(sign.eq(etaminus), 0);
  p.addcmul_(grad.sign(), s.step_size(), -1);
  s.prev().copy_(grad);
}
DTL_INLINE void Rprop::group_fields(Fields& f, Options& o) {
  f("lr", o.lr())("etas", o.etas())("step_sizes", o.step_sizes())("maximize", o.maximize());
  impl::single_tensor_keys(f);
}
DTL_INLINE void Rprop::state_fields(Fields& f, State& s) {
  f("step", s.step())("prev", s.prev())("step_size", s.step_size());
}

}  // namespace optim
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_TORCH_OPTIM_INL_HPP
