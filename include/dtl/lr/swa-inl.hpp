// dtl — the non-template definitions of <dtl/lr/swa.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_SWA_INL_HPP
#define DTL_LR_SWA_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/swa.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE SWALR::SWALR(std::shared_ptr<torch::optim::Optimizer> optimizer, PerGroup swa_lr, std::int64_t anneal_epochs,
                        AnnealStrategy anneal_strategy)
    : LRScheduler(std::move(optimizer)) {
  std::string spelled = "AnnealStrategy(" + std::to_string(static_cast<int>(anneal_strategy)) + ")";
  if (anneal_strategy == AnnealStrategy::cos) spelled = "cos";
  if (anneal_strategy == AnnealStrategy::linear) spelled = "linear";
  init(swa_lr, anneal_epochs, spelled);
}

DTL_INLINE SWALR::SWALR(std::shared_ptr<torch::optim::Optimizer> optimizer, PerGroup swa_lr, std::int64_t anneal_epochs,
                        std::string_view anneal_strategy)
    : LRScheduler(std::move(optimizer)) {
  init(swa_lr, anneal_epochs, anneal_strategy);
}

DTL_INLINE void SWALR::init(const PerGroup& swa_lr, std::int64_t anneal_epochs, std::string_view anneal_strategy) {
  // Python's checks, in its order. Python writes swa_lr into the groups before the other two; a
  // refused SWALR here leaves the groups as they were.
  const auto n = groups();
  if (!swa_lr.scalar && !swa_lr.empty() && swa_lr.values.size() != n)
    detail::invalid("SWALR", "swa_lr must have the same length as optimizer.param_groups: swa_lr has " +
                                 std::to_string(swa_lr.values.size()) + " values, optimizer.param_groups has " +
                                 std::to_string(n));
  const auto swa_lrs = swa_lr.expand("SWALR", "swa_lr", n);
  if (anneal_strategy == "cos")
    anneal_strategy_ = AnnealStrategy::cos;
  else if (anneal_strategy == "linear")
    anneal_strategy_ = AnnealStrategy::linear;
  else
    detail::invalid("SWALR",
                    "anneal_strategy must be one of 'cos' or 'linear', instead got " + std::string(anneal_strategy));
  if (anneal_epochs < 0)
    detail::invalid("SWALR", "anneal_epochs must be equal or greater than 0, got " + std::to_string(anneal_epochs));
  anneal_epochs_ = anneal_epochs;
  auto& keys = detail::param_group_keys();
  for (std::size_t i = 0; i < n; ++i) keys.set(optimizer_, i, "swa_lr", swa_lrs[i]);
  start();
}

DTL_INLINE void SWALR::fields(StateFields& f) {
  // Python 2.x's _set_anneal_func: "cos" is the cosine, anything else the line.
  f("anneal_epochs", anneal_epochs_)
      .named("_anneal_strategy", anneal_strategy_, {{AnnealStrategy::cos, "cos"}, {AnnealStrategy::linear, "linear"}},
             AnnealStrategy::linear);
}

DTL_INLINE void SWALR::get_lr(std::span<double> lrs) {
  // Python's get_lr: undo the previous step's blend to recover the lr being annealed from, then
  // blend it with swa_lr at this step's alpha. `step` counts from the construction step (0).
  auto step = step_count() - 1;
  if (anneal_epochs_ == 0) step = std::max<std::int64_t>(1, step);
  const auto epochs = static_cast<double>(std::max<std::int64_t>(1, anneal_epochs_));
  const double prev_alpha = anneal(std::clamp(static_cast<double>(step - 1) / epochs, 0.0, 1.0));
  const double alpha = anneal(std::clamp(static_cast<double>(step) / epochs, 0.0, 1.0));
  auto& keys = detail::param_group_keys();
  for (std::size_t i = 0; i < lrs.size(); ++i) {
    const auto swa = keys.get(*optimizer_, i, "swa_lr");  // Python's group['swa_lr'], read each step
    if (!swa) detail::invalid("SWALR", "param group " + std::to_string(i) + " has no 'swa_lr'");
    const double prev = prev_alpha == 1 ? *swa : (lrs[i] - prev_alpha * *swa) / (1 - prev_alpha);
    lrs[i] = *swa * alpha + prev * (1 - alpha);
  }
}

DTL_INLINE double SWALR::anneal(double t) const {
  if (anneal_strategy_ == AnnealStrategy::linear) return t;
  return (1 - std::cos(std::numbers::pi * t)) / 2;
}

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_SWA_INL_HPP
