// dtl — the non-template definitions of <dtl/lr/cosine.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_COSINE_INL_HPP
#define DTL_LR_COSINE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/cosine.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE CosineAnnealingLR::CosineAnnealingLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t T_max,
                                                double eta_min)
    : LRScheduler(std::move(optimizer)), T_max_(T_max), eta_min_(eta_min) {
  if (T_max < 1) detail::invalid("CosineAnnealingLR", "T_max must be >= 1, got " + std::to_string(T_max));
  start();
}

DTL_INLINE void CosineAnnealingLR::fields(StateFields& f) {
  f("T_max", T_max_)("eta_min", eta_min_);
}

DTL_INLINE void CosineAnnealingLR::get_lr(std::span<double> lrs) {
  constexpr double pi = std::numbers::pi;
  const auto e = last_epoch();
  const auto T = static_cast<double>(T_max_);
  const auto& base = base_lrs();
  if (e == 0) return;
  if (step_count() == 1 && e > 0) {
    for (std::size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base[i] - eta_min_) * (1 + std::cos(static_cast<double>(e) * pi / T)) / 2;
  } else if ((e - 1 - T_max_) % (2 * T_max_) == 0) {
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = lrs[i] + (base[i] - eta_min_) * (1 - std::cos(pi / T)) / 2;
  } else {
    const double f =
        (1 + std::cos(pi * static_cast<double>(e) / T)) / (1 + std::cos(pi * static_cast<double>(e - 1) / T));
    for (auto& v : lrs) v = f * (v - eta_min_) + eta_min_;
  }
}

DTL_INLINE bool CosineAnnealingLR::closed_form_lr(std::span<double> lrs) {
  constexpr double pi = std::numbers::pi;
  const double c = 1 + std::cos(pi * static_cast<double>(last_epoch()) / static_cast<double>(T_max_));
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = eta_min_ + (base_lrs()[i] - eta_min_) * c / 2;
  return true;
}

DTL_INLINE CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                                                    std::int64_t T_0, std::int64_t T_mult,
                                                                    double eta_min)
    : LRScheduler(std::move(optimizer)), T_0_(T_0), T_i_(static_cast<double>(T_0)), T_mult_(T_mult), eta_min_(eta_min) {
  if (T_0 <= 0)
    detail::invalid("CosineAnnealingWarmRestarts", "Expected positive integer T_0, but got " + std::to_string(T_0));
  if (T_mult < 1)
    detail::invalid("CosineAnnealingWarmRestarts", "Expected integer T_mult >= 1, but got " + std::to_string(T_mult));
  start();
}

DTL_INLINE void CosineAnnealingWarmRestarts::step() {
  if (last_epoch() < 0) {
    step(0.0);
    return;
  }
  T_cur_ += 1;
  if (T_cur_ >= T_i_) {
    T_cur_ -= T_i_;
    T_i_ *= static_cast<double>(T_mult_);
  }
  set_last_epoch(last_epoch() + 1);
  update_lrs();  // Python's override of step() does not count _step_count
}

DTL_INLINE void CosineAnnealingWarmRestarts::step(double epoch) {
  if (epoch < 0)
    detail::invalid("CosineAnnealingWarmRestarts", "Expected non-negative epoch, but got " + std::to_string(epoch));
  const auto T0 = static_cast<double>(T_0_);
  if (epoch >= T0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, T0);
    } else {
      const auto m = static_cast<double>(T_mult_);
      const auto n = static_cast<std::int64_t>(std::log(epoch / T0 * (m - 1) + 1) / std::log(m));
      T_cur_ = epoch - T0 * (std::pow(m, static_cast<double>(n)) - 1) / (m - 1);
      T_i_ = T0 * std::pow(m, static_cast<double>(n));
    }
  } else {
    T_i_ = T0;
    T_cur_ = epoch;
  }
  set_last_epoch(static_cast<std::int64_t>(std::floor(epoch)));
  update_lrs();
}

DTL_INLINE void CosineAnnealingWarmRestarts::fields(StateFields& f) {
  f("T_0", T_0_).number("T_i", T_i_)("T_mult", T_mult_)("eta_min", eta_min_).number("T_cur", T_cur_);
}

DTL_INLINE void CosineAnnealingWarmRestarts::get_lr(std::span<double> lrs) {
  const double c = 1 + std::cos(std::numbers::pi * T_cur_ / T_i_);
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = eta_min_ + (base_lrs()[i] - eta_min_) * c / 2;
}

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_COSINE_INL_HPP
