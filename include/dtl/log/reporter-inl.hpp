// dtl — the definitions behind <dtl/log/reporter.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
#ifndef DTL_LOG_REPORTER_INL_HPP
#define DTL_LOG_REPORTER_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/log/reporter.hpp>

namespace dtl::inline DTL_ABI::detail {

DTL_INLINE ScalarMetrics scalar_metrics(const MetricsJson& metrics) {
  ScalarMetrics out;
  for (const auto& [k, v] : metrics.items())
    if (v.is_number()) out.emplace_back(k, v.get<double>());
  return out;
}

DTL_INLINE Reporter::Reporter(const std::filesystem::path& run_dir, bool is_chief, ReporterOptions options)
    : chief_(is_chief), quiet_(options.quiet) {
  if (!chief_) return;
  path_ = run_dir / "metrics.jsonl";
  std::filesystem::create_directories(run_dir);
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
  if (options.tensorboard) tb_.emplace(*options.tensorboard);
  tensorboard_ = options.tensorboard;
}

DTL_INLINE void Reporter::resumed_at(std::int64_t steps) {
  if (!chief_) return;
  if (tensorboard_) tensorboard_->purge_step(steps + 1);
  out_.close();
  std::string kept, superseded, line;
  std::int64_t moved = 0;
  {
    std::ifstream in(path_);
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto rec = nlohmann::ordered_json::parse(line, nullptr, false);
      const bool readable = !rec.is_discarded() && rec.is_object();
      const auto* step = readable && rec.contains("steps_completed") ? &rec["steps_completed"] : nullptr;
      if (step && step->is_number_integer() && step->get<std::int64_t>() <= steps) {
        kept += line;
        kept += '\n';
        continue;
      }
      nlohmann::ordered_json aside;
      if (readable) {
        aside = std::move(rec);
        aside["superseded_at_resume"] = steps;
      } else {
        aside = {{"superseded_at_resume", steps}, {"unreadable", line}};
      }
      superseded += aside.dump() + '\n';
      ++moved;
    }
  }
  if (moved > 0) {
    // Set aside first, then metrics.jsonl replaced in one rename: a crash between the two leaves a
    // record in both files, never in neither.
    const auto aside_path = path_.parent_path() / "metrics.superseded.jsonl";
    std::ofstream aside(aside_path, std::ios::app);
    aside << superseded;
    aside.flush();
    if (!aside) throw std::runtime_error("dtl: cannot write " + aside_path.string());
    auto tmp = path_;
    tmp += ".tmp";
    {
      std::ofstream t(tmp, std::ios::trunc);
      t << kept;
      t.flush();
      if (!t) throw std::runtime_error("dtl: cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, path_);
    note("resumed at batch " + std::to_string(steps) + ": " + std::to_string(moved) +
         " record(s) of metrics.jsonl after it, from the interrupted run, moved to " + aside_path.string());
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
}

DTL_INLINE void Reporter::start_training(std::optional<std::int64_t> total, std::int64_t done) {
  if (!chief_ || quiet_) return;
  train_progress_.emplace("train", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
  if (done > 0) train_progress_->update(done);
}

DTL_INLINE void Reporter::batch_trained(std::int64_t done) {
  if (train_progress_) train_progress_->update(done);
}

DTL_INLINE void Reporter::finish_training() {
  if (train_progress_) train_progress_->finish();
  train_progress_.reset();
}

DTL_INLINE void Reporter::start_validation(std::optional<std::int64_t> total) {
  if (!chief_ || quiet_) return;
  if (train_progress_) train_progress_->clear();
  val_progress_.emplace("validate", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
}

DTL_INLINE void Reporter::batch_validated(std::int64_t done) {
  if (val_progress_) val_progress_->update(done);
}

DTL_INLINE void Reporter::training(std::int64_t steps, std::int64_t epochs, double progress,
                                   const TrainingReport& report, const WorkloadTiming& t, const MetricsJson& timings) {
  if (!chief_) return;
  const auto& metrics = report.avg_metrics;
  write("training", steps, epochs, metrics, t, timings);
  if (tb_ && timings.is_object()) tb_->writer().write_metrics("Determined/profiling/", scalar_metrics(timings), steps);
  if (tb_) tb_->on_train_step_end(steps, scalar_metrics(metrics), report.column_names, report.columns);
  if (train_progress_ && metrics.contains("loss") && metrics["loss"].is_number())
    train_progress_->set_loss(metrics["loss"].get<double>());
  std::ostringstream line;
  line << "[train] batch " << steps << " epoch " << epochs << " (" << static_cast<int>(progress * 100.0 + 0.5) << "%) "
       << summary(metrics);
  if (t.seconds > 0) line << " | " << fixed(t.batches / t.seconds, 1) << " batches/s";
  if (t.seconds > 0 && t.records > 0) line << ", " << fixed(t.records / t.seconds, 0) << " records/s";
  print(line.str());
}

DTL_INLINE void Reporter::validation(std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
                                     const WorkloadTiming& t) {
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

DTL_INLINE void Reporter::note(const std::string& text) {
  if (chief_) print("[dtl] " + text);
}

DTL_INLINE void Reporter::warn(const std::string& text) {
  if (!chief_) return;
  if (train_progress_) train_progress_->clear();
  std::cerr << "[dtl] warning: " << text << std::endl;
}

DTL_INLINE void Reporter::write(const char* type, std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
                                const WorkloadTiming& t, const MetricsJson& timings) {
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

DTL_INLINE std::string Reporter::fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

DTL_INLINE std::string Reporter::summary(const MetricsJson& metrics) {
  std::string s;
  for (const auto& [k, v] : metrics.items()) {
    if (!s.empty()) s += ' ';
    s += k + '=' + (v.is_number_float() ? fixed(v.get<double>(), 4) : v.dump());
  }
  return s;
}

DTL_INLINE void Reporter::print(const std::string& line) {
  if (quiet_) return;
  if (train_progress_)
    train_progress_->print_above(line);  // keeps the summary intact above the redrawn bar
  else
    std::cout << line << std::endl;
}

}  // namespace dtl::detail

#endif  // DTL_LOG_REPORTER_INL_HPP
