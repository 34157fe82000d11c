// dtl — the non-template definitions of <dtl/trainer/validation_bookkeeping.hpp>; see
// detail/compiled_lib.hpp.
#ifndef DTL_TRAINER_VALIDATION_BOOKKEEPING_INL_HPP
#define DTL_TRAINER_VALIDATION_BOOKKEEPING_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/errors.hpp>
#include <dtl/trainer/validation_bookkeeping.hpp>

#include <cmath>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE void ValidationBookkeeping::validated(const MetricsJson& metrics, std::int64_t batch, RunSummary& summary) {
  const auto searched = metrics.find(metric_);
  last_ = searched != metrics.end() && searched->is_number() ? std::optional<double>(searched->get<double>())
                                                             : std::nullopt;
  non_finite_.reset();  // never the best, never a checkpoint's metric
  if (last_ && !std::isfinite(*last_)) non_finite_ = std::exchange(last_, std::nullopt);
  if (last_) summary.validated(*last_, batch);
}

DTL_INLINE void ValidationBookkeeping::check_finite(std::int64_t batch, const RunSummary& summary, Console& console) {
  if (!non_finite_) return;
  const std::string what =
      "the searcher metric '" + metric_ + "' is " + number_word(*non_finite_) + " at batch " + std::to_string(batch);
  const auto& latest = summary.latest_checkpoint();
  const std::string kept = latest ? "the last finite checkpoint is " + latest->first + " (batch " +
                                        std::to_string(latest->second) + ")"
                                  : std::string("no checkpoint was written before it");
  if (!continue_on_non_finite_)
    throw NonFiniteMetricError("dtl: " + what + ": training stopped (it diverged); " + kept +
                               ", and stays latest and best; resume from it with a lower learning rate, or set "
                               "FitOptions.continue_on_non_finite = true to train on");
  if (warned_.insert("validation:" + metric_).second)
    console.warn(what + "; training continues (continue_on_non_finite), and no checkpoint counts it as best");
}

DTL_INLINE bool ValidationBookkeeping::wants_checkpoint(const MetricsJson& metrics,
                                                        const std::optional<std::optional<double>>& experiment_best,
                                                        std::optional<double>& best_validation) const {
  switch (policy_) {
    case CheckpointPolicy::all:
      return true;
    case CheckpointPolicy::none:
      return false;
    case CheckpointPolicy::best:
      break;
  }
  const auto it = metrics.find(metric_);
  if (it == metrics.end() || !it->is_number())
    throw InvalidExperimentException(
        "dtl: checkpoint_policy best compares the searcher metric '" + metric_ +
        "', but validation returned no numeric metric of that name: set FitOptions.searcher_metric (or "
        "searcher.metric in the config) to one of your validation metrics, or use CheckpointPolicy::all");
  const double v = it->get<double>();
  if (!std::isfinite(v)) return false;  // a NaN/inf metric is never the best
  auto beats = [&](const std::optional<double>& best) {
    return !best || (smaller_is_better_ ? v < *best : v > *best);
  };
  const bool better = beats(experiment_best ? *experiment_best : best_validation);
  if (beats(best_validation)) best_validation = v;
  return better;
}

DTL_INLINE void ValidationBookkeeping::check_training(const MetricsJson& avg, std::int64_t batch, Console& console) {
  for (const auto& [name, v] : avg.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>()) && warned_.insert(name).second)
      console.warn("training metric '" + name + "' is " + number_word(v.get<double>()) +
                   " in the workload ending at batch " + std::to_string(batch) +
                   " (its first non-finite value): the run may be diverging; a lower learning rate, gradient "
                   "clipping (step_optimizer(opt, dtl::clip_grad_norm(1.0))) or mixed-precision loss "
                   "scaling may help");
}

DTL_INLINE std::string ValidationBookkeeping::number_word(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::to_string(v);
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_VALIDATION_BOOKKEEPING_INL_HPP
