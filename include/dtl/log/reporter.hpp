// dtl — the reporter: the console of a run (progress lines, notes, warnings) and the fan-out of
// reported metrics to every MetricsSink. dtl's own sinks: metrics.jsonl (one JSON object per
// report), TensorBoard scalars as Determined writes them, and the console's summary lines.
#ifndef DTL_LOG_REPORTER_HPP
#define DTL_LOG_REPORTER_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/fixed.hpp>
#include <dtl/log/metrics_sink.hpp>
#include <dtl/log/progress.hpp>
#include <dtl/log/tensorboard.hpp>
#include <dtl/builtin_reducers.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Host scalars of a metrics object, for TensorBoard: numbers only, as Determined writes.
DTL_INLINE ScalarMetrics scalar_metrics(const MetricsJson& metrics);

/// The chief's console: a progress line for training and one for validation, and lines printed
/// above them. Silent on the other ranks; `quiet` silences all but warnings.
class Console {
 public:
  Console(bool is_chief, bool quiet) : chief_(is_chief), quiet_(quiet) {}

  /// Starts the training progress line (`total` batches, if known).
  DTL_INLINE void start_training(std::optional<std::int64_t> total, std::int64_t done);
  /// Per batch: a compare and a clock read; it draws only when a redraw is due, showing the loss
  /// `latest_loss()` gives then (nullopt: the last report's).
  template <class LatestLoss>
  void batch_trained(std::int64_t done, LatestLoss&& latest_loss) {
    if (train_progress_) train_progress_->update(done, std::forward<LatestLoss>(latest_loss));
  }
  DTL_INLINE void finish_training();
  DTL_INLINE void start_validation(std::optional<std::int64_t> total);
  void batch_validated(std::int64_t done) {
    if (val_progress_) val_progress_->update(done);
  }
  DTL_INLINE void end_validation();
  DTL_INLINE void set_loss(double loss);

  DTL_INLINE void note(const std::string& text);
  /// Also printed when quiet: something the user must see (a data position that could not be
  /// restored, a fallback).
  DTL_INLINE void warn(const std::string& text);
  /// A line above the progress bar (nothing when quiet or not the chief).
  DTL_INLINE void print(const std::string& line);

 private:
  bool chief_;
  bool quiet_;
  std::optional<ProgressLine> train_progress_;
  std::optional<ProgressLine> val_progress_;
};

/// metrics.jsonl: `{"type":"training"|"validation","steps_completed":N,"epoch":E,"metrics":{...},
/// "batches":B,"seconds":S}` per report, `"timings"` when profiling.
class MetricsJsonl final : public MetricsSink {
 public:
  DTL_INLINE MetricsJsonl(const std::filesystem::path& run_dir, std::function<void(const std::string&)> note);
  DTL_INLINE void report(const MetricsRecord& r) override;
  /// The records after `steps` (the interrupted run's, from between its last checkpoint and its
  /// end, about to be written again) move to metrics.superseded.jsonl, each with
  /// `"superseded_at_resume": steps` added (an unreadable line — torn by a kill — as
  /// `{"superseded_at_resume": steps, "unreadable": line}`), so that metrics.jsonl holds each step once.
  DTL_INLINE void resumed_at(std::int64_t steps) override;

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::function<void(const std::string&)> note_;
};

/// Determined's TensorBoard scalars (BatchMetricWriter), profiling timings as
/// `Determined/profiling/<phase>`; a resume purges the events after its step.
class TensorBoardMetrics final : public MetricsSink {
 public:
  explicit TensorBoardMetrics(SummaryWriter& writer) : writer_(writer), tb_(writer) {}
  DTL_INLINE void report(const MetricsRecord& r) override;
  void resumed_at(std::int64_t steps) override { writer_.purge_step(steps + 1); }

 private:
  SummaryWriter& writer_;
  BatchMetricWriter tb_;
};

/// The console's one-line summary of each report.
class ConsoleMetrics final : public MetricsSink {
 public:
  explicit ConsoleMetrics(Console& console) : console_(console) {}
  DTL_INLINE void report(const MetricsRecord& r) override;

 private:
  Console& console_;
};

/// What the chief reports to (the other ranks report nowhere).
struct ReporterOptions {
  bool quiet = false;                    ///< no console output (files are still written)
  SummaryWriter* tensorboard = nullptr;  ///< where Determined's TensorBoard scalars go; none if null
};

class Reporter {
 public:
  DTL_INLINE Reporter(const std::filesystem::path& run_dir, bool is_chief, ReporterOptions options = {});

  Console& console() noexcept { return console_; }
  /// Another destination, after dtl's own (chief only; ignored elsewhere).
  void add_sink(std::shared_ptr<MetricsSink> sink) {
    if (chief_) sinks_.push_back(std::move(sink));
  }

  void report(const MetricsRecord& r) {
    for (const auto& s : sinks_) s->report(r);
  }
  /// A run resumed at `steps` batches (MetricsSink::resumed_at of every sink).
  void resumed_at(std::int64_t steps) {
    for (const auto& s : sinks_) s->resumed_at(steps);
  }
  void phase_started(RunPhase phase) {
    for (const auto& s : sinks_) s->phase_started(phase);
  }
  void flush() {
    for (const auto& s : sinks_) s->flush();
  }

 private:
  bool chief_;
  Console console_;
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/log/reporter-inl.hpp>
#endif

#endif  // DTL_LOG_REPORTER_HPP
