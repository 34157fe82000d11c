// dtl — the non-template definitions of <dtl/profiler.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_PROFILER_INL_HPP
#define DTL_PROFILER_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/torch_compat_profiler.hpp>
#include <dtl/profiler.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE ProfilerAction profiler_action(const ProfilerSchedule& s, std::int64_t k) {
  if (k < s.skip_first) return ProfilerAction::none;
  const std::int64_t j = k - s.skip_first, cycle = s.wait + s.warmup + s.active;
  if (s.repeat > 0 && j / cycle >= s.repeat) return ProfilerAction::none;
  const std::int64_t pos = j % cycle;
  if (pos < s.wait) return ProfilerAction::none;
  if (pos < s.wait + s.warmup) return ProfilerAction::warmup;
  return pos == cycle - 1 ? ProfilerAction::record_and_save : ProfilerAction::record;
}

DTL_INLINE ScheduledProfiler::ScheduledProfiler(ProfilerSchedule schedule, std::filesystem::path default_dir)
    : s_(std::move(schedule)) {
  if (s_.wait < 0 || s_.warmup < 0 || s_.active < 1 || s_.repeat < 0 || s_.skip_first < 0)
    throw InvalidExperimentException(
        "dtl: set_profiler: the schedule needs wait, warmup, repeat, skip_first >= 0 and active >= 1");
  if (s_.trace_dir.empty()) s_.trace_dir = std::move(default_dir);
}

DTL_INLINE ScheduledProfiler::~ScheduledProfiler() {
  if (!recording_) return;
  try {
    compat::kineto_stop_and_save(file_->string());
  } catch (...) {  // a destructor: the run's own outcome matters more than a partial trace
  }
}

DTL_INLINE void ScheduledProfiler::before_batch() {
  const auto a = profiler_action(s_, k_);
  const bool record = a == ProfilerAction::record || a == ProfilerAction::record_and_save;
  if (compat::kineto_profiler) {
    if (a == ProfilerAction::warmup && !warming_ && !recording_) {
      compat::kineto_prepare();
      warming_ = true;
    } else if (record && !recording_) {
      std::filesystem::create_directories(s_.trace_dir);
      file_ = s_.trace_dir /
              ("dtl." + std::to_string(::getpid()) + ".batch" + std::to_string(k_) + ".pt.trace.json");
      compat::kineto_start();
      warming_ = false;
      recording_ = true;
    }
    return;
  }
  if (a == ProfilerAction::warmup && !warmup_) {
    warmup_.emplace();
    guard_ = std::make_unique<torch::autograd::profiler::RecordProfile>(*warmup_);
  } else if (record && !file_) {
    guard_.reset();  // ends a warmup
    warmup_.reset();
    std::filesystem::create_directories(s_.trace_dir);
    const auto path =
        s_.trace_dir / ("dtl." + std::to_string(::getpid()) + ".batch" + std::to_string(k_) + ".pt.trace.json");
    file_ = path;
    guard_ = std::make_unique<torch::autograd::profiler::RecordProfile>(path.string());
  }
}

DTL_INLINE void ScheduledProfiler::after_batch() {
  if (profiler_action(s_, k_) == ProfilerAction::record_and_save) {
    if (recording_) {
      compat::kineto_stop_and_save(file_->string());
      recording_ = false;
    } else {
      guard_.reset();  // RecordProfile writes the trace when destroyed
    }
    traces_.push_back(*file_);
    file_.reset();
  }
  ++k_;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_PROFILER_INL_HPP
