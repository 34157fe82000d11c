// dtl — the non-template definitions of <dtl/lr/decay.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_DECAY_INL_HPP
#define DTL_LR_DECAY_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/decay.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE StepLR::StepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(std::move(optimizer)), step_size_(step_size), gamma_(gamma) {
  if (step_size < 1) detail::invalid("StepLR", "step_size must be >= 1");
  start();
}

DTL_INLINE void StepLR::fields(StateFields& f) {
  f("step_size", step_size_)("gamma", gamma_);
}

DTL_INLINE void StepLR::get_lr(std::span<double> lrs) {
  if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return;
  for (auto& v : lrs) v *= gamma_;
}

DTL_INLINE bool StepLR::closed_form_lr(std::span<double> lrs) {
  const double f = std::pow(gamma_, static_cast<double>(last_epoch() / step_size_));
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

DTL_INLINE MultiStepLR::MultiStepLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                    std::vector<std::int64_t> milestones, double gamma)
    : LRScheduler(std::move(optimizer)), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  start();
}

DTL_INLINE void MultiStepLR::fields(StateFields& f) {
  if (auto* out = f.saving()) {
    nlohmann::json counter = nlohmann::json::object();
    for (auto m : milestones_) {
      auto& c = counter[std::to_string(m)];
      c = c.is_null() ? 1 : c.get<std::int64_t>() + 1;
    }
    (*out)["milestones"] = std::move(counter);
  } else if (const auto* counter = f.present("milestones"); counter && counter->is_object()) {
    milestones_.clear();
    for (const auto& [k, count] : counter->items())
      for (std::int64_t c = 0; c < count.get<std::int64_t>(); ++c) milestones_.push_back(std::stoll(k));
    std::sort(milestones_.begin(), milestones_.end());
  }
  f("gamma", gamma_);
}

DTL_INLINE void MultiStepLR::get_lr(std::span<double> lrs) {
  const auto [lo, hi] = std::equal_range(milestones_.begin(), milestones_.end(), last_epoch());
  if (lo == hi) return;
  const double f = std::pow(gamma_, static_cast<double>(hi - lo));
  for (auto& v : lrs) v *= f;
}

DTL_INLINE bool MultiStepLR::closed_form_lr(std::span<double> lrs) {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch()) - milestones_.begin();
  const double f = std::pow(gamma_, static_cast<double>(passed));
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

DTL_INLINE ExponentialLR::ExponentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double gamma)
    : LRScheduler(std::move(optimizer)), gamma_(gamma) {
  start();
}

DTL_INLINE void ExponentialLR::fields(StateFields& f) {
  f("gamma", gamma_);
}

DTL_INLINE void ExponentialLR::get_lr(std::span<double> lrs) {
  if (last_epoch() == 0) return;
  for (auto& v : lrs) v *= gamma_;
}

DTL_INLINE bool ExponentialLR::closed_form_lr(std::span<double> lrs) {
  const double f = std::pow(gamma_, static_cast<double>(last_epoch()));
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

DTL_INLINE ConstantLR::ConstantLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double factor,
                                  std::int64_t total_iters)
    : LRScheduler(std::move(optimizer)), factor_(factor), total_iters_(total_iters) {
  if (factor > 1.0 || factor < 0)
    detail::invalid("ConstantLR", "Constant multiplicative factor expected to be between 0 and 1.");
  start();
}

DTL_INLINE void ConstantLR::fields(StateFields& f) {
  f("factor", factor_)("total_iters", total_iters_);
}

DTL_INLINE void ConstantLR::get_lr(std::span<double> lrs) {
  const auto e = last_epoch();
  if (e == 0) {
    for (auto& v : lrs) v *= factor_;
  } else if (e == total_iters_) {
    for (auto& v : lrs) v *= 1.0 / factor_;
  }
}

DTL_INLINE bool ConstantLR::closed_form_lr(std::span<double> lrs) {
  const double f = factor_ + (last_epoch() >= total_iters_ ? 1.0 : 0.0) * (1 - factor_);
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

DTL_INLINE LinearLR::LinearLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double start_factor,
                              double end_factor, std::int64_t total_iters)
    : LRScheduler(std::move(optimizer)),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  if (start_factor > 1.0 || start_factor <= 0)
    detail::invalid("LinearLR", "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  if (end_factor > 1.0 || end_factor < 0)
    detail::invalid("LinearLR", "Ending multiplicative factor expected to be between 0 and 1.");
  if (total_iters < 1) detail::invalid("LinearLR", "total_iters must be >= 1");
  start();
}

DTL_INLINE void LinearLR::fields(StateFields& f) {
  f("start_factor", start_factor_)("end_factor", end_factor_)("total_iters", total_iters_);
}

DTL_INLINE void LinearLR::get_lr(std::span<double> lrs) {
  const auto e = last_epoch();
  if (e == 0) {
    for (auto& v : lrs) v *= start_factor_;
    return;
  }
  if (e > total_iters_) return;
  const double d = end_factor_ - start_factor_;
  const double f = 1. + d / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(e - 1) * d);
  for (auto& v : lrs) v *= f;
}

DTL_INLINE bool LinearLR::closed_form_lr(std::span<double> lrs) {
  const auto n = static_cast<double>(std::min(total_iters_, last_epoch()));
  const double f = start_factor_ + (end_factor_ - start_factor_) * n / static_cast<double>(total_iters_);
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

DTL_INLINE PolynomialLR::PolynomialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t total_iters,
                                      double power)
    : LRScheduler(std::move(optimizer)), total_iters_(total_iters), power_(power) {
  if (total_iters < 1) detail::invalid("PolynomialLR", "total_iters must be >= 1");
  start();
}

DTL_INLINE void PolynomialLR::fields(StateFields& f) {
  f("total_iters", total_iters_)("power", power_);
}

DTL_INLINE void PolynomialLR::get_lr(std::span<double> lrs) {
  const auto e = last_epoch();
  if (e == 0 || e > total_iters_) return;
  const auto t = static_cast<double>(total_iters_);
  const double f = std::pow((1.0 - static_cast<double>(e) / t) / (1.0 - static_cast<double>(e - 1) / t), power_);
  for (auto& v : lrs) v *= f;
}

DTL_INLINE bool PolynomialLR::closed_form_lr(std::span<double> lrs) {
  const auto t = static_cast<double>(total_iters_);
  const double f = std::pow(1.0 - static_cast<double>(std::min(total_iters_, last_epoch())) / t, power_);
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
  return true;
}

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_DECAY_INL_HPP
