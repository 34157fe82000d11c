// dtl — the profiler: `context.set_profiler(schedule)` profiles scheduled train_batch calls with
// LibTorch's profiler and writes one Chrome-trace JSON file per active cycle (chrome://tracing and
// Perfetto open it). The schedule is torch.profiler.schedule's: skip_first batches, then cycles of
// wait / warmup / active batches, `repeat` times (0: for the whole run). Debian's LibTorch is built
// without Kineto, so this drives the autograd profiler (`RecordProfile`), which records every
// ATen op on the CPU with its timing.
#ifndef DTL_PROFILER_HPP
#define DTL_PROFILER_HPP

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <dtl/errors.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dtl {

/// torch.profiler.schedule(wait, warmup, active, repeat, skip_first).
///   ctx.set_profiler({.wait = 1, .warmup = 1, .active = 2, .repeat = 2});
struct ProfilerSchedule {
  std::int64_t wait = 1;
  std::int64_t warmup = 1;
  std::int64_t active = 3;
  std::int64_t repeat = 1;  ///< cycles to record; 0 records every cycle of the run
  std::int64_t skip_first = 0;
  /// Where the traces go; empty: `<run_dir>/profiler`.
  std::filesystem::path trace_dir;
};

namespace detail {

/// What the schedule says about the k-th train_batch of this process (counted from 0).
enum class ProfilerAction { none, warmup, record, record_and_save };

inline ProfilerAction profiler_action(const ProfilerSchedule& s, std::int64_t k) {
  if (k < s.skip_first) return ProfilerAction::none;
  const std::int64_t j = k - s.skip_first, cycle = s.wait + s.warmup + s.active;
  if (s.repeat > 0 && j / cycle >= s.repeat) return ProfilerAction::none;
  const std::int64_t pos = j % cycle;
  if (pos < s.wait) return ProfilerAction::none;
  if (pos < s.wait + s.warmup) return ProfilerAction::warmup;
  return pos == cycle - 1 ? ProfilerAction::record_and_save : ProfilerAction::record;
}

/// Runs the schedule around train_batch calls: `before_batch()` starts or keeps the profiler on,
/// `after_batch()` ends an active window and writes its trace. Warmup runs the profiler into a
/// discarded stream, as torch's warmup discards its results.
class ScheduledProfiler {
 public:
  ScheduledProfiler(ProfilerSchedule schedule, std::filesystem::path default_dir) : s_(std::move(schedule)) {
    if (s_.wait < 0 || s_.warmup < 0 || s_.active < 1 || s_.repeat < 0 || s_.skip_first < 0)
      throw InvalidExperimentException(
          "dtl: set_profiler: the schedule needs wait, warmup, repeat, skip_first >= 0 and active >= 1");
    if (s_.trace_dir.empty()) s_.trace_dir = std::move(default_dir);
  }

  void before_batch() {
    const auto a = profiler_action(s_, k_);
    if (a == ProfilerAction::warmup && !warmup_) {
      warmup_.emplace();
      guard_ = std::make_unique<torch::autograd::profiler::RecordProfile>(*warmup_);
    } else if ((a == ProfilerAction::record || a == ProfilerAction::record_and_save) && !file_) {
      guard_.reset();  // ends a warmup
      warmup_.reset();
      std::filesystem::create_directories(s_.trace_dir);
      const auto path =
          s_.trace_dir / ("dtl." + std::to_string(::getpid()) + ".batch" + std::to_string(k_) + ".pt.trace.json");
      file_ = path;
      guard_ = std::make_unique<torch::autograd::profiler::RecordProfile>(path.string());
    }
  }

  void after_batch() {
    if (profiler_action(s_, k_) == ProfilerAction::record_and_save) {
      guard_.reset();  // RecordProfile writes the trace when destroyed
      traces_.push_back(*file_);
      file_.reset();
    }
    ++k_;
  }

  /// Whether this batch runs under the profiler (then train_batch gets a named scope in the trace).
  [[nodiscard]] bool active() const noexcept { return guard_ != nullptr; }
  /// Traces written so far.
  [[nodiscard]] const std::vector<std::filesystem::path>& traces() const noexcept { return traces_; }

 private:
  ProfilerSchedule s_;
  std::int64_t k_ = 0;
  std::optional<std::ostringstream> warmup_;
  std::optional<std::filesystem::path> file_;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> guard_;
  std::vector<std::filesystem::path> traces_;
};

}  // namespace detail
}  // namespace dtl

#endif  // DTL_PROFILER_HPP
