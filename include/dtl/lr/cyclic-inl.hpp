// dtl — the non-template definitions of <dtl/lr/cyclic.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_CYCLIC_INL_HPP
#define DTL_LR_CYCLIC_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/cyclic.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE CyclicLR::CyclicLR(std::shared_ptr<torch::optim::Optimizer> optimizer, CyclicLROptions o)
    : LRScheduler(std::move(optimizer)),
      mode_(o.mode),
      gamma_(o.gamma),
      scale_fn_(std::move(o.scale_fn)),
      cycle_momentum_(o.cycle_momentum) {
  const auto n = groups();
  auto base = o.base_lr.expand("CyclicLR", "base_lr", n);
  for (std::size_t i = 0; i < n; ++i) group_options(i).set_lr(base[i]);
  max_lrs_ = o.max_lr.expand("CyclicLR", "max_lr", n);
  const double up = o.step_size_up;
  const double down = o.step_size_down.value_or(up);
  if (!(up > 0) || !(down >= 0)) detail::invalid("CyclicLR", "step_size_up must be > 0 and step_size_down >= 0");
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  scale_mode_ = scale_fn_ ? o.scale_mode : (mode_ == CyclicMode::exp_range ? ScaleMode::iterations : ScaleMode::cycle);
  if (cycle_momentum_) {
    kinds_ = detail::momentum_kinds(*optimizer_, "CyclicLR");
    auto base_m = o.base_momentum.expand("CyclicLR", "base_momentum", n);
    for (std::size_t i = 0; i < n; ++i) detail::set_momentum(group_options(i), kinds_[i], base_m[i]);
    for (std::size_t i = 0; i < n; ++i) base_momentums_.push_back(detail::get_momentum(group_options(i), kinds_[i]));
    max_momentums_ = o.max_momentum.expand("CyclicLR", "max_momentum", n);
  }
  start();
  set_base_lrs(std::move(base));  // Python assigns base_lrs after its initial step
}

DTL_INLINE void CyclicLR::fields(StateFields& f) {
  f("max_lrs", max_lrs_)("total_size", total_size_)("step_ratio", step_ratio_);
  f.saved("mode", mode_ == CyclicMode::triangular    ? "triangular"
                  : mode_ == CyclicMode::triangular2 ? "triangular2"
                                                     : "exp_range");
  f("gamma", gamma_);
  f.saved("_scale_fn_custom", nullptr).saved("scale_mode", scale_mode_ == ScaleMode::cycle ? "cycle" : "iterations");
  f.saved("cycle_momentum", cycle_momentum_);
  if (cycle_momentum_)
    f.saved("use_beta1", !kinds_.empty() && detail::uses_beta1(kinds_.front()))("base_momentums", base_momentums_)(
        "max_momentums", max_momentums_);
}

DTL_INLINE void CyclicLR::get_lr(std::span<double> lrs) {
  const auto e = static_cast<double>(last_epoch());
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1. + e / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double s = scale(scale_mode_ == ScaleMode::cycle ? cycle : e);
  const auto& base = base_lrs();
  for (std::size_t i = 0; i < lrs.size(); ++i) {
    const double base_height = (max_lrs_[i] - base[i]) * scale_factor;
    lrs[i] = base[i] + base_height * s;
  }
  if (cycle_momentum_) {
    for (std::size_t i = 0; i < lrs.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * scale_factor;
      detail::set_momentum(group_options(i), kinds_[i], max_momentums_[i] - base_height * s);
    }
  }
}

DTL_INLINE double CyclicLR::scale(double x) const {
  if (scale_fn_) return scale_fn_(x);
  switch (mode_) {
    case CyclicMode::triangular:
      return 1.;
    case CyclicMode::triangular2:
      return 1 / std::pow(2., x - 1);
    case CyclicMode::exp_range:
      return std::pow(gamma_, x);
  }
  return 1.;
}

DTL_INLINE OneCycleLR::OneCycleLR(std::shared_ptr<torch::optim::Optimizer> optimizer, OneCycleLROptions o)
    : LRScheduler(std::move(optimizer)), anneal_(o.anneal_strategy), cycle_momentum_(o.cycle_momentum) {
  if (!o.total_steps && !o.epochs && !o.steps_per_epoch)
    detail::invalid("OneCycleLR", "You must define either total_steps OR (epochs AND steps_per_epoch)");
  if (o.total_steps) {
    if (*o.total_steps <= 0)
      detail::invalid("OneCycleLR", "Expected positive integer total_steps, but got " + std::to_string(*o.total_steps));
    total_steps_ = *o.total_steps;
  } else {
    if (!o.epochs || *o.epochs <= 0)
      detail::invalid("OneCycleLR", "Expected positive integer epochs, but got " +
                                        (o.epochs ? std::to_string(*o.epochs) : std::string("None")));
    if (!o.steps_per_epoch || *o.steps_per_epoch <= 0)
      detail::invalid("OneCycleLR", "Expected positive integer steps_per_epoch, but got " +
                                        (o.steps_per_epoch ? std::to_string(*o.steps_per_epoch) : std::string("None")));
    total_steps_ = *o.epochs * *o.steps_per_epoch;
  }
  const auto T = static_cast<double>(total_steps_);
  if (o.three_phase) {
    phases_ = {Phase{o.pct_start * T - 1, initial_lr, max_lr, max_momentum, base_momentum},
               Phase{2 * o.pct_start * T - 2, max_lr, initial_lr, base_momentum, max_momentum},
               Phase{T - 1, initial_lr, min_lr, max_momentum, max_momentum}};
  } else {
    phases_ = {Phase{o.pct_start * T - 1, initial_lr, max_lr, max_momentum, base_momentum},
               Phase{T - 1, max_lr, min_lr, base_momentum, max_momentum}};
  }
  if (o.pct_start < 0 || o.pct_start > 1)
    detail::invalid("OneCycleLR", "Expected float between 0 and 1 pct_start, but got " + std::to_string(o.pct_start));
  const auto n = groups();
  auto& keys = detail::param_group_keys();
  const auto max_lrs = o.max_lr.expand("OneCycleLR", "max_lr", n);
  for (std::size_t i = 0; i < n; ++i) {
    const double initial = max_lrs[i] / o.div_factor;
    keys.set(optimizer_, i, "initial_lr", initial);
    keys.set(optimizer_, i, "max_lr", max_lrs[i]);
    keys.set(optimizer_, i, "min_lr", initial / o.final_div_factor);
  }
  if (cycle_momentum_) {
    kinds_ = detail::momentum_kinds(*optimizer_, "OneCycleLR");
    const auto max_m = o.max_momentum.expand("OneCycleLR", "max_momentum", n);
    const auto base_m = o.base_momentum.expand("OneCycleLR", "base_momentum", n);
    for (std::size_t i = 0; i < n; ++i) {
      detail::set_momentum(group_options(i), kinds_[i], max_m[i]);
      keys.set(optimizer_, i, "max_momentum", max_m[i]);
      keys.set(optimizer_, i, "base_momentum", base_m[i]);
    }
  }
  read_group_keys();
  start();
}

DTL_INLINE void OneCycleLR::fields(StateFields& f) {
  f("total_steps", total_steps_);
  if (auto* out = f.saving()) {
    const auto& names = detail::kSchedulerGroupKeys;
    auto phases = nlohmann::json::array();
    for (std::size_t p = 0; p < phases_.size(); ++p) {
      const auto& ph = phases_[p];
      nlohmann::json end = ph.end_step;
      if (p + 1 == phases_.size()) end = total_steps_ - 1;  // Python's last end_step is an int
      phases.push_back({{"end_step", end},
                        {"start_lr", names[ph.start_lr]},
                        {"end_lr", names[ph.end_lr]},
                        {"start_momentum", names[ph.start_m]},
                        {"end_momentum", names[ph.end_m]}});
    }
    (*out)["_schedule_phases"] = std::move(phases);
  } else if (const auto* phases = f.present("_schedule_phases"); phases && phases->size() == phases_.size()) {
    for (std::size_t p = 0; p < phases_.size(); ++p) phases_[p].end_step = (*phases)[p].at("end_step").get<double>();
  }
  f.named("_anneal_func_type", anneal_, {{AnnealStrategy::cos, "cos"}, {AnnealStrategy::linear, "linear"}},
          AnnealStrategy::cos);
  f.saved("cycle_momentum", cycle_momentum_);
  if (cycle_momentum_) f.saved("use_beta1", !kinds_.empty() && detail::uses_beta1(kinds_.front()));
}

DTL_INLINE void OneCycleLR::load_state_dict(const nlohmann::json& state) {
  LRScheduler::load_state_dict(state);
  read_group_keys();  // the optimizer's param_groups were loaded first, with their keys
}

DTL_INLINE void OneCycleLR::get_lr(std::span<double> lrs) {
  const auto step_num = last_epoch();
  if (step_num > total_steps_)
    detail::invalid("OneCycleLR", "Tried to step " + std::to_string(step_num + 1) +
                                      " times. The specified number of total steps is " + std::to_string(total_steps_));
  const auto s = static_cast<double>(step_num);
  for (std::size_t g = 0; g < lrs.size(); ++g) {
    const auto& v = values_[g];
    double start_step = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
      const auto& ph = phases_[i];
      if (s <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (s - start_step) / (ph.end_step - start_step);
        lrs[g] = anneal(v[ph.start_lr], v[ph.end_lr], pct);
        if (cycle_momentum_) detail::set_momentum(group_options(g), kinds_[g], anneal(v[ph.start_m], v[ph.end_m], pct));
        break;
      }
      start_step = ph.end_step;
    }
  }
}

DTL_INLINE double OneCycleLR::anneal(double start, double end, double pct) const {
  if (anneal_ == AnnealStrategy::linear) return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

DTL_INLINE void OneCycleLR::read_group_keys() {
  auto& keys = detail::param_group_keys();
  values_.assign(groups(), {});
  for (std::size_t g = 0; g < groups(); ++g)
    for (std::size_t k = 0; k < values_[g].size(); ++k)
      if (auto v = keys.get(*optimizer_, g, detail::kSchedulerGroupKeys[k])) values_[g][k] = *v;
}

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_CYCLIC_INL_HPP
