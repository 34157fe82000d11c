// dtl — the reporter: where reported workloads and validations go. The chief appends one JSON
// object per report to <run_dir>/metrics.jsonl, writes TensorBoard scalars as Determined does,
// prints a one-line summary, and keeps a progress line for training and validation.
#ifndef DTL_LOG_REPORTER_HPP
#define DTL_LOG_REPORTER_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/log/progress.hpp>
#include <dtl/log/tensorboard.hpp>
#include <dtl/reducer.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dtl::inline DTL_ABI::detail {

/// Throughput figures of a workload or a validation.
struct WorkloadTiming {
  std::int64_t batches = 0;
  std::int64_t records = 0;
  double seconds = 0.0;
};

/// Host scalars of a metrics object, for TensorBoard: numbers only, as Determined writes.
DTL_INLINE ScalarMetrics scalar_metrics(const MetricsJson& metrics);

/// What the console shows.
struct ReporterOptions {
  bool quiet = false;                    ///< no console output (files are still written)
  SummaryWriter* tensorboard = nullptr;  ///< where Determined's TensorBoard scalars go; none if null
};

class Reporter {
 public:
  DTL_INLINE Reporter(const std::filesystem::path& run_dir, bool is_chief, ReporterOptions options = {});

  /// Starts the training progress line (`total` batches, if known).
  DTL_INLINE void start_training(std::optional<std::int64_t> total, std::int64_t done);
  /// Per batch: a compare and a clock read; it draws only when a redraw is due.
  DTL_INLINE void batch_trained(std::int64_t done);
  DTL_INLINE void finish_training();
  DTL_INLINE void start_validation(std::optional<std::int64_t> total);
  DTL_INLINE void batch_validated(std::int64_t done);

  /// `{"type":"training","steps_completed":N,"epoch":E,"metrics":{...}}`
  /// `timings` (profiling_enabled): seconds per phase since the previous report, also written as
  /// `{"timings": {...}}` and as TensorBoard scalars `Determined/profiling/<phase>`.
  DTL_INLINE void training(std::int64_t steps, std::int64_t epochs, double progress, const TrainingReport& report,
                           const WorkloadTiming& t, const MetricsJson& timings = nullptr);

  /// `{"type":"validation","steps_completed":N,"epoch":E,"metrics":{...}}`
  DTL_INLINE void validation(std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
                             const WorkloadTiming& t);

  /// A run resumed at `steps` batches: the records of metrics.jsonl after that step (the interrupted
  /// run's, from between its last checkpoint and its end, about to be written again) move to
  /// metrics.superseded.jsonl, each with `"superseded_at_resume": steps` added (an unreadable line —
  /// torn by a kill — as `{"superseded_at_resume": steps, "unreadable": line}`), so that
  /// metrics.jsonl holds each step once, as Determined's master rolls back metrics above a
  /// resumed trial's step. TensorBoard is told to drop the events after `steps`
  /// (SummaryWriter::purge_step).
  DTL_INLINE void resumed_at(std::int64_t steps);

  DTL_INLINE void note(const std::string& text);
  /// Also printed when quiet: something the user must see (a data position that could not be
  /// restored, a fallback).
  DTL_INLINE void warn(const std::string& text);

 private:
  DTL_INLINE void write(const char* type, std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
                        const WorkloadTiming& t, const MetricsJson& timings = nullptr);
  DTL_INLINE static std::string fixed(double v, int digits);
  DTL_INLINE static std::string summary(const MetricsJson& metrics);
  DTL_INLINE void print(const std::string& line);

  bool chief_;
  bool quiet_;
  std::optional<BatchMetricWriter> tb_;
  SummaryWriter* tensorboard_ = nullptr;
  std::optional<ProgressLine> train_progress_;
  std::optional<ProgressLine> val_progress_;
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace dtl::detail

#ifndef DTL_COMPILED_LIB
#include <dtl/log/reporter-inl.hpp>
#endif

#endif  // DTL_LOG_REPORTER_HPP
