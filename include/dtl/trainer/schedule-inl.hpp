// dtl — the non-template definitions of <dtl/trainer/schedule.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_TRAINER_SCHEDULE_INL_HPP
#define DTL_TRAINER_SCHEDULE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/trainer/schedule.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE MetricsJson PhaseTimes::take(std::optional<Clock::duration> allreduce_wait) {
  auto s = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  MetricsJson t = {{"data_wait_seconds", s(data_wait)},
                   {"train_step_seconds", s(train_step)},
                   {"validation_seconds", s(validation)},
                   {"checkpoint_seconds", s(checkpoint)}};
  if (allreduce_wait) t["allreduce_wait_seconds"] = s(*allreduce_wait);
  *this = {};
  return t;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_SCHEDULE_INL_HPP
