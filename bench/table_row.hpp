// One row of the benchmark table: scripts/bench.sh collects the lines that start with "ROW |" from
// every benchmark's output and writes them, in order, into docs/benchmarks.md.
#pragma once

#include <cstdio>
#include <string>

namespace bench {

struct Target {
  const char* text = "";  // e.g. "<= 1.02"; empty: no target, the row only reports
  bool met = true;
};

/// `measured` and `baseline` are the two figures the ratio divides, with their units.
inline void table_row(const std::string& benchmark, const std::string& measured, const std::string& baseline,
                      double ratio, Target target = {}) {
  char r[32];
  std::snprintf(r, sizeof r, ratio >= 0.1 ? "%.3f" : "%.2g", ratio);  // 3 decimals near 1, 2 digits when tiny
  std::printf("ROW | %s | %s | %s | %s | %s | %s |\n", benchmark.c_str(), measured.c_str(), baseline.c_str(), r,
              *target.text ? target.text : "—", *target.text ? (target.met ? "yes" : "**no**") : "");
  std::fflush(stdout);
}

inline std::string fmt(double v, const char* unit, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}

}  // namespace bench
