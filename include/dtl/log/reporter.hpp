// dtl — the reporter: where reported workloads and validations go. The chief appends one JSON
// object per report to <run_dir>/metrics.jsonl, writes TensorBoard scalars as Determined does,
// prints a one-line summary, and keeps a progress line for training and validation.
#ifndef DTL_LOG_REPORTER_HPP
#define DTL_LOG_REPORTER_HPP

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

namespace dtl::detail {

/// Throughput figures of a workload or a validation.
struct WorkloadTiming {
  std::int64_t batches = 0;
  std::int64_t records = 0;
  double seconds = 0.0;
};

/// Host scalars of a metrics object, for TensorBoard: numbers only, as Determined writes.
inline ScalarMetrics scalar_metrics(const MetricsJson& metrics) {
  ScalarMetrics out;
  for (const auto& [k, v] : metrics.items())
    if (v.is_number()) out.emplace_back(k, v.get<double>());
  return out;
}

/// What the console shows.
struct ReporterOptions {
  bool quiet = false;                    ///< no console output (files are still written)
  SummaryWriter* tensorboard = nullptr;  ///< where Determined's TensorBoard scalars go; none if null
};

class Reporter {
 public:
  Reporter(const std::filesystem::path& run_dir, bool is_chief, ReporterOptions options = {})
      : chief_(is_chief), quiet_(options.quiet) {
    if (!chief_) return;
    path_ = run_dir / "metrics.jsonl";
    std::filesystem::create_directories(run_dir);
    out_.open(path_, std::ios::app);
    if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
    if (options.tensorboard) tb_.emplace(*options.tensorboard);
  }

  /// Starts the training progress line (`total` batches, if known).
  void start_training(std::optional<std::int64_t> total, std::int64_t done) {
    if (!chief_ || quiet_) return;
    train_progress_.emplace("train", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
    if (done > 0) train_progress_->update(done);
  }
  /// Per batch: a compare and a clock read; it draws only when a redraw is due.
  void batch_trained(std::int64_t done) {
    if (train_progress_) train_progress_->update(done);
  }
  void finish_training() {
    if (train_progress_) train_progress_->finish();
    train_progress_.reset();
  }
  void start_validation(std::optional<std::int64_t> total) {
    if (!chief_ || quiet_) return;
    if (train_progress_) train_progress_->clear();
    val_progress_.emplace("validate", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
  }
  void batch_validated(std::int64_t done) {
    if (val_progress_) val_progress_->update(done);
  }

  /// `{"type":"training","steps_completed":N,"epoch":E,"metrics":{...}}`
  /// `timings` (profiling_enabled): seconds per phase since the previous report, also written as
  /// `{"timings": {...}}` and as TensorBoard scalars `Determined/profiling/<phase>`.
  void training(std::int64_t steps, std::int64_t epochs, double progress, const TrainingReport& report,
                const WorkloadTiming& t, const MetricsJson& timings = nullptr) {
    if (!chief_) return;
    const auto& metrics = report.avg_metrics;
    write("training", steps, epochs, metrics, t, timings);
    if (tb_ && timings.is_object())
      tb_->writer().write_metrics("Determined/profiling/", scalar_metrics(timings), steps);
    if (tb_) tb_->on_train_step_end(steps, scalar_metrics(metrics), report.column_names, report.columns);
    if (train_progress_ && metrics.contains("loss") && metrics["loss"].is_number())
      train_progress_->set_loss(metrics["loss"].get<double>());
    std::ostringstream line;
    line << "[train] batch " << steps << " epoch " << epochs << " (" << static_cast<int>(progress * 100.0 + 0.5)
         << "%) " << summary(metrics);
    if (t.seconds > 0) line << " | " << fixed(t.batches / t.seconds, 1) << " batches/s";
    if (t.seconds > 0 && t.records > 0) line << ", " << fixed(t.records / t.seconds, 0) << " records/s";
    print(line.str());
  }

  /// `{"type":"validation","steps_completed":N,"epoch":E,"metrics":{...}}`
  void validation(std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics, const WorkloadTiming& t) {
    if (!chief_) return;
    if (val_progress_) val_progress_->clear();
    val_progress_.reset();
    write("validation", steps, epochs, metrics, t);
    if (tb_) tb_->on_validation_step_end(steps, scalar_metrics(metrics));
    std::ostringstream line;
    line << "[valid] batch " << steps << " epoch " << epochs << " " << summary(metrics) << " | " << fixed(t.seconds, 2)
         << " s";
    print(line.str());
  }

  void note(const std::string& text) {
    if (chief_) print("[dtl] " + text);
  }
  /// Also printed when quiet: something the user must see (a data position that could not be
  /// restored, a fallback).
  void warn(const std::string& text) {
    if (!chief_) return;
    if (train_progress_) train_progress_->clear();
    std::cerr << "[dtl] warning: " << text << std::endl;
  }

 private:
  void write(const char* type, std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
             const WorkloadTiming& t, const MetricsJson& timings = nullptr) {
    nlohmann::ordered_json rec;
    rec["type"] = type;
    rec["steps_completed"] = steps;
    rec["epoch"] = epochs;
    rec["metrics"] = metrics;
    rec["batches"] = t.batches;
    rec["seconds"] = t.seconds;
    if (timings.is_object()) rec["timings"] = timings;
    out_ << rec.dump() << '\n';
    out_.flush();
  }
  static std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
  }
  static std::string summary(const MetricsJson& metrics) {
    std::string s;
    for (const auto& [k, v] : metrics.items()) {
      if (!s.empty()) s += ' ';
      s += k + '=' + (v.is_number_float() ? fixed(v.get<double>(), 4) : v.dump());
    }
    return s;
  }
  void print(const std::string& line) {
    if (quiet_) return;
    if (train_progress_)
      train_progress_->print_above(line);  // keeps the summary intact above the redrawn bar
    else
      std::cout << line << std::endl;
  }

  bool chief_;
  bool quiet_;
  std::optional<BatchMetricWriter> tb_;
  std::optional<ProgressLine> train_progress_;
  std::optional<ProgressLine> val_progress_;
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace dtl::detail

#endif  // DTL_LOG_REPORTER_HPP
