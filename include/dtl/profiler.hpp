// dtl — the profiler: `context.set_profiler(schedule)` profiles scheduled train_batch calls with
// LibTorch's profiler and writes one Chrome-trace JSON file per active cycle (chrome://tracing and
// Perfetto open it). The schedule is torch.profiler.schedule's: skip_first batches, then cycles of
// wait / warmup / active batches, `repeat` times (0: for the whole run). On LibTorch 2.x it drives
// Kineto, torch.profiler's engine (CPU, and CUDA activity where there is a GPU; the traces also
// open in TensorBoard's PyTorch profiler plugin); Debian's 1.13 is built without Kineto, so there
// it drives the autograd profiler (`RecordProfile`), which records every ATen op on the CPU.
#ifndef DTL_PROFILER_HPP
#define DTL_PROFILER_HPP

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>
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
inline namespace DTL_ABI {

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

DTL_INLINE ProfilerAction profiler_action(const ProfilerSchedule& s, std::int64_t k);

/// Runs the schedule around train_batch calls: `before_batch()` starts or keeps the profiler on,
/// `after_batch()` ends an active window and writes its trace. Warmup runs the profiler into a
/// discarded stream, as torch's warmup discards its results.
class ScheduledProfiler {
 public:
  DTL_INLINE ScheduledProfiler(ProfilerSchedule schedule, std::filesystem::path default_dir);
  /// A cycle cut short (the run ended inside it) still writes its trace, on both profilers.
  DTL_INLINE ~ScheduledProfiler();
  ScheduledProfiler(const ScheduledProfiler&) = delete;
  ScheduledProfiler& operator=(const ScheduledProfiler&) = delete;

  DTL_INLINE void before_batch();

  DTL_INLINE void after_batch();

  /// Whether this batch runs under the profiler (then train_batch gets a named scope in the trace).
  [[nodiscard]] bool active() const noexcept { return guard_ != nullptr || recording_; }
  /// Traces written so far.
  [[nodiscard]] const std::vector<std::filesystem::path>& traces() const noexcept { return traces_; }

 private:
  ProfilerSchedule s_;
  std::int64_t k_ = 0;
  std::optional<std::ostringstream> warmup_;
  std::optional<std::filesystem::path> file_;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> guard_;  // the autograd profiler (1.13)
  bool warming_ = false, recording_ = false;                          // Kineto (2.x)
  std::vector<std::filesystem::path> traces_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/profiler-inl.hpp>
#endif

#endif  // DTL_PROFILER_HPP
