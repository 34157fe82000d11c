// dtl — the definitions behind <dtl/log/reporter.hpp>: the console, metrics.jsonl, TensorBoard and console sinks.
#ifndef DTL_LOG_REPORTER_INL_HPP
#define DTL_LOG_REPORTER_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/log/reporter.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE ScalarMetrics scalar_metrics(const MetricsJson& metrics) {
  ScalarMetrics out;
  for (const auto& [k, v] : metrics.items())
    if (v.is_number()) out.emplace_back(k, v.get<double>());
  return out;
}

DTL_INLINE Reporter::Reporter(const std::filesystem::path& run_dir, bool is_chief, ReporterOptions options)
    : chief_(is_chief), console_(is_chief, options.quiet) {
  if (!chief_) return;
  // dtl's own destinations, in the order they receive each report; a new one is one more line.
  sinks_.push_back(std::make_shared<MetricsJsonl>(run_dir, [this](const std::string& t) { console_.note(t); }));
  if (options.tensorboard) sinks_.push_back(std::make_shared<TensorBoardMetrics>(*options.tensorboard));
  sinks_.push_back(std::make_shared<ConsoleMetrics>(console_));
}

// ---- metrics.jsonl ------------------------------------------------------------------------

DTL_INLINE MetricsJsonl::MetricsJsonl(const std::filesystem::path& run_dir,
                                      std::function<void(const std::string&)> note)
    : path_(run_dir / "metrics.jsonl"), note_(std::move(note)) {
  std::filesystem::create_directories(run_dir);
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
}

DTL_INLINE void MetricsJsonl::report(const MetricsRecord& r) {
  nlohmann::ordered_json rec;
  rec["type"] = r.type == MetricsRecord::Type::training ? "training" : "validation";
  rec["steps_completed"] = r.steps_completed;
  rec["epoch"] = r.epochs;
  rec["metrics"] = r.metrics;
  rec["batches"] = r.batches;
  rec["seconds"] = r.seconds;
  if (r.timings && r.timings->is_object()) rec["timings"] = *r.timings;
  out_ << rec.dump() << '\n';
  out_.flush();
}

DTL_INLINE void MetricsJsonl::resumed_at(std::int64_t steps) {
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
    note_("resumed at batch " + std::to_string(steps) + ": " + std::to_string(moved) +
          " record(s) of metrics.jsonl after it, from the interrupted run, moved to " + aside_path.string());
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
}

// ---- TensorBoard --------------------------------------------------------------------------

DTL_INLINE void TensorBoardMetrics::report(const MetricsRecord& r) {
  if (r.type == MetricsRecord::Type::validation) {
    tb_.on_validation_step_end(r.steps_completed, scalar_metrics(r.metrics));
    return;
  }
  if (r.timings && r.timings->is_object())
    writer_.write_metrics("Determined/profiling/", scalar_metrics(*r.timings), r.steps_completed);
  if (r.report)
    tb_.on_train_step_end(r.steps_completed, scalar_metrics(r.metrics), r.report->column_names, r.report->columns);
  else
    tb_.on_train_step_end(r.steps_completed, scalar_metrics(r.metrics));
}

// ---- the console --------------------------------------------------------------------------

namespace console_format {
inline std::string summary(const MetricsJson& metrics) {
  std::string s;
  for (const auto& [k, v] : metrics.items()) {
    if (!s.empty()) s += ' ';
    s += k + '=' + (v.is_number_float() ? fixed(v.get<double>(), 4) : v.dump());
  }
  return s;
}
}  // namespace console_format

DTL_INLINE void ConsoleMetrics::report(const MetricsRecord& r) {
  using console_format::summary;
  std::ostringstream line;
  if (r.type == MetricsRecord::Type::validation) {
    console_.end_validation();
    line << "[valid] batch " << r.steps_completed << " epoch " << r.epochs << " " << summary(r.metrics) << " | "
         << fixed(r.seconds, 2) << " s";
  } else {
    if (r.metrics.contains("loss") && r.metrics["loss"].is_number()) console_.set_loss(r.metrics["loss"].get<double>());
    line << "[train] batch " << r.steps_completed << " epoch " << r.epochs << " ("
         << static_cast<int>(r.progress * 100.0 + 0.5) << "%) " << summary(r.metrics);
    if (r.seconds > 0) line << " | " << fixed(static_cast<double>(r.batches) / r.seconds, 1) << " batches/s";
    if (r.seconds > 0 && r.records > 0) line << ", " << fixed(static_cast<double>(r.records) / r.seconds, 0) << " records/s";
  }
  console_.print(line.str());
}

DTL_INLINE void Console::start_training(std::optional<std::int64_t> total, std::int64_t done) {
  if (!chief_ || quiet_) return;
  train_progress_.emplace("train", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
  if (done > 0) train_progress_->update(done);
}

DTL_INLINE void Console::finish_training() {
  if (train_progress_) train_progress_->finish();
  train_progress_.reset();
}

DTL_INLINE void Console::start_validation(std::optional<std::int64_t> total) {
  if (!chief_ || quiet_) return;
  if (train_progress_) train_progress_->clear();
  val_progress_.emplace("validate", total, std::cout, ProgressOptions{.style = default_progress_style(stdout)});
}

DTL_INLINE void Console::end_validation() {
  if (val_progress_) val_progress_->clear();
  val_progress_.reset();
}

DTL_INLINE void Console::set_loss(double loss) {
  if (train_progress_) train_progress_->set_loss(loss);
}

DTL_INLINE void Console::note(const std::string& text) {
  if (chief_) print("[dtl] " + text);
}

DTL_INLINE void Console::warn(const std::string& text) {
  if (!chief_) return;
  if (train_progress_) train_progress_->clear();
  std::cerr << "[dtl] warning: " << text << std::endl;
}

DTL_INLINE void Console::print(const std::string& line) {
  if (!chief_ || quiet_) return;
  if (train_progress_)
    train_progress_->print_above(line);  // keeps the summary intact above the redrawn bar
  else
    std::cout << line << std::endl;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LOG_REPORTER_INL_HPP
