// dtl — the reporter: where reported workloads and validations go. The chief appends one JSON
// object per report to <run_dir>/metrics.jsonl and prints a one-line summary to the console.
#ifndef DTL_LOG_REPORTER_HPP
#define DTL_LOG_REPORTER_HPP

#include <dtl/reducer.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace dtl::detail {

/// Throughput figures of a workload or a validation.
struct WorkloadTiming {
  std::int64_t batches = 0;
  std::int64_t records = 0;
  double seconds = 0.0;
};

class Reporter {
 public:
  Reporter(const std::filesystem::path& run_dir, bool is_chief) : chief_(is_chief) {
    if (!chief_) return;
    path_ = run_dir / "metrics.jsonl";
    out_.open(path_, std::ios::app);
    if (!out_) throw std::runtime_error("dtl: cannot write " + path_.string());
  }

  /// `{"type":"training","steps_completed":N,"epoch":E,"metrics":{...}}`
  void training(std::int64_t steps, std::int64_t epochs, double progress, const MetricsJson& metrics,
                const WorkloadTiming& t) {
    if (!chief_) return;
    write("training", steps, epochs, metrics, t);
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
    write("validation", steps, epochs, metrics, t);
    std::ostringstream line;
    line << "[valid] batch " << steps << " epoch " << epochs << " " << summary(metrics) << " | "
         << fixed(t.seconds, 2) << " s";
    print(line.str());
  }

  void note(const std::string& text) {
    if (chief_) print("[dtl] " + text);
  }

 private:
  void write(const char* type, std::int64_t steps, std::int64_t epochs, const MetricsJson& metrics,
             const WorkloadTiming& t) {
    nlohmann::ordered_json rec;
    rec["type"] = type;
    rec["steps_completed"] = steps;
    rec["epoch"] = epochs;
    rec["metrics"] = metrics;
    rec["batches"] = t.batches;
    rec["seconds"] = t.seconds;
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
  static void print(const std::string& line) { std::cout << line << std::endl; }

  bool chief_;
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace dtl::detail

#endif  // DTL_LOG_REPORTER_HPP
