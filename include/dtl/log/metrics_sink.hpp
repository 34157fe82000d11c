// dtl — where metrics go: MetricsSink, the interface every destination of reported training and
// validation metrics implements (metrics.jsonl, TensorBoard, the console; a cluster's master).
#ifndef DTL_LOG_METRICS_SINK_HPP
#define DTL_LOG_METRICS_SINK_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/builtin_reducers.hpp>

#include <cstdint>

namespace dtl {
inline namespace DTL_ABI {

/// One report, as every destination receives it: on the chief, at a workload boundary (never per
/// batch), after the metrics were reduced across ranks.
struct MetricsRecord {
  enum class Type { training, validation };
  Type type = Type::training;
  std::int64_t steps_completed = 0;  ///< batches trained so far
  std::int64_t epochs = 0;           ///< epochs trained so far
  const MetricsJson& metrics;        ///< the workload's averaged metrics, or the validation's
  std::int64_t batches = 0;          ///< batches in this workload or validation
  std::int64_t records = 0;          ///< records in this workload (training; across ranks)
  double seconds = 0.0;              ///< its wall time
  double progress = 0.0;             ///< share of the run done (training)
  /// profiling_enabled: seconds per phase since the previous training report, else null.
  const MetricsJson* timings = nullptr;
  /// Training: the per-batch metrics too (TensorBoard writes one point per batch).
  const TrainingReport* report = nullptr;
  /// Training: the workload ended at the run's length or at a reporting period, where
  /// Determined reports the trial's progress (not at a validation or checkpoint boundary alone).
  bool progress_due = false;
};

/// What the chief starts: a training workload, a validation, a checkpoint (Determined shows it
/// as the trial's state in its WebUI).
enum class RunPhase { training, validating, checkpointing };

/// A destination of reported metrics. Add one with `Trainer::add_metrics_sink`; dtl's own are
/// wired in detail::Reporter's constructor (log/reporter-inl.hpp).
///   struct Collect : dtl::MetricsSink {
///     std::vector<double> losses;
///     void report(const dtl::MetricsRecord& r) override {
///       if (r.type == dtl::MetricsRecord::Type::validation) losses.push_back(r.metrics["validation_loss"]);
///     }
///   };
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void report(const MetricsRecord& record) = 0;
  /// A run resumed at `steps` batches: what this destination holds above that step came from the
  /// interrupted run and is about to be reported again; supersede it (Determined's master rolls
  /// such metrics back).
  virtual void resumed_at(std::int64_t /*steps*/) {}
  /// The chief starts a training workload, a validation or a checkpoint.
  virtual void phase_started(RunPhase /*phase*/) {}
  /// The fit is over (finished, or stopped with its checkpoint written): deliver what is still
  /// pending, within a bound. An exception here fails the fit; what was saved stays saved.
  virtual void flush() {}
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LOG_METRICS_SINK_HPP
