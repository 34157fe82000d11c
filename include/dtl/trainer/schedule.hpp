// dtl — a fit's schedule as its options give it: the boundaries a training workload ends at
// (Determined's train / validate / checkpoint / report periods), how much is left to train, and
// the share done; and the time each phase took since the last training report.
#ifndef DTL_TRAINER_SCHEDULE_HPP
#define DTL_TRAINER_SCHEDULE_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/compiled_lib.hpp>

#include <dtl/builtin_reducers.hpp>
#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/trainer/fit_options.hpp>
#include <dtl/units.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Which boundaries fired at the end of a batch, handled in Determined's order.
struct Boundaries {
  bool train = false, validate = false, checkpoint = false, report = false;
  [[nodiscard]] bool any() const noexcept { return train || validate || checkpoint || report; }
};

/// The periods a workload ends at: max_length (one batch in test mode), validation and
/// checkpoint periods (none: only at the end), the reporting period.
struct Periods {
  explicit Periods(const FitOptions& o)
      : train(o.test_mode ? Length{Batch{1}} : *o.max_length),
        validation(o.validation_period.value_or(Batch::never())),
        checkpoint(o.checkpoint_period.value_or(Batch::never())),
        reporting(o.reporting_period) {}
  /// After `batches` batches in all, in epoch `epoch` (1-based), `epoch_end` if it just ended.
  [[nodiscard]] Boundaries fired(std::int64_t batches, std::int64_t epoch, bool epoch_end) const {
    return {.train = train.fires(batches, epoch, epoch_end),
            .validate = validation.fires(batches, epoch, epoch_end),
            .checkpoint = checkpoint.fires(batches, epoch, epoch_end),
            .report = reporting.fires(batches, epoch, epoch_end)};
  }
  Length train, validation, checkpoint, reporting;
};

/// Determined's loop condition: `max_length.value - (batches | epochs trained) > 0`.
[[nodiscard]] inline std::int64_t remaining(const FitOptions& o, const TrialState& s) {
  if (o.test_mode) return s.batches_trained == 0 ? 1 : 0;
  const auto& m = *o.max_length;
  return m.value() - (m.is_batches() ? s.batches_trained : s.epochs_trained);
}

/// Batches a fit trains in all, when known (for the progress line).
[[nodiscard]] inline std::optional<std::int64_t> total_batches(const FitOptions& o, std::int64_t epoch_len) {
  if (o.test_mode) return 1;
  const auto& m = *o.max_length;
  if (m.is_batches()) return m.value();
  if (epoch_len == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  return m.value() * epoch_len;
}

/// The share of the run done, for the console. Per batch whenever the run's length in batches is
/// known — also for an Epoch length — so that it moves with every report, not once per epoch
/// (Determined's own progress counts whole epochs).
[[nodiscard]] inline double progress(const FitOptions& o, const TrialState& s, std::int64_t epoch_len) {
  if (o.test_mode) return 1.0;
  if (const auto total = total_batches(o, epoch_len))
    return static_cast<double>(s.batches_trained) / static_cast<double>(std::max<std::int64_t>(*total, 1));
  return static_cast<double>(s.epochs_trained) / static_cast<double>(std::max<std::int64_t>(o.max_length->value(), 1));
}

/// Time per phase since the last training report (`profiling_enabled`).
struct PhaseTimes {
  using Clock = std::chrono::steady_clock;
  Clock::duration data_wait{}, train_step{}, validation{}, checkpoint{};

  /// The report's `timings` (with the gradient all-reduce's wait on several processes), and a
  /// fresh count.
  DTL_INLINE MetricsJson take(std::optional<Clock::duration> allreduce_wait);
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/trainer/schedule-inl.hpp>
#endif

#endif  // DTL_TRAINER_SCHEDULE_HPP
