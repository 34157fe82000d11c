// dtl — where stop requests come from: StopSource, asked at every workload boundary (signals, a
// callback's set_stop_requested; a cluster's preemption). A stop checkpoints, then returns.
#ifndef DTL_STOP_SOURCE_HPP
#define DTL_STOP_SOURCE_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {

/// A source of stop requests. Add one with `Trainer::add_stop_source`; dtl's own (signals, the
/// context's set_stop_requested) are wired in detail::default_stop_sources (trainer/stop_sources.hpp).
/// A request on any rank stops every rank at the same boundary, after a checkpoint.
///   struct StopAfter : dtl::StopSource {           // stop when a file appears
///     std::optional<std::string> stop_requested() override {
///       if (std::filesystem::exists("STOP")) return "the STOP file";
///       return std::nullopt;
///     }
///   };
class StopSource {
 public:
  virtual ~StopSource() = default;
  /// Asked at every workload boundary, on every rank: why to stop now, or nullopt. Must be cheap
  /// and must not call collectives.
  [[nodiscard]] virtual std::optional<std::string> stop_requested() = 0;
  /// After the stop checkpoint is complete, on every rank, whichever source asked: what this source
  /// does once the run has stopped (a signal sets the exit status; a cluster acknowledges the
  /// preemption). Returns a line for the console, or nullopt.
  virtual std::optional<std::string> stopped(std::int64_t /*batches_trained*/) { return std::nullopt; }
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_STOP_SOURCE_HPP
