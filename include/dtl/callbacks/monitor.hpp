// dtl — what the metric-watching callbacks share: the direction a metric improves in, and
// reading the monitored metric out of a validation's metrics with an error that helps.
#ifndef DTL_CALLBACKS_MONITOR_HPP
#define DTL_CALLBACKS_MONITOR_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/json_float.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dtl {
inline namespace DTL_ABI {

/// Which way a monitored metric improves (Python's `mode="min"` / `mode="max"`). One type for
/// the callbacks and the scheduler, so an option set for one fits the other.
///   dtl::callbacks::EarlyStopping(ctx, {.monitor = "accuracy", .mode = dtl::MonitorMode::max});
enum class MonitorMode {
  min,  ///< smaller is better (losses, errors)
  max,  ///< larger is better (accuracies)
};

/// Python's spelling: `to_string(MonitorMode::min) == "min"`.
[[nodiscard]] inline std::string to_string(MonitorMode m) { return m == MonitorMode::min ? "min" : "max"; }

/// Parses Python's spelling; anything else is an error naming the value and the choices, so a
/// hand-edited state_dict fails where it is read, not later.
///   auto m = dtl::parse_monitor_mode("max");
[[nodiscard]] inline MonitorMode parse_monitor_mode(std::string_view s) {
  if (s == "min") return MonitorMode::min;
  if (s == "max") return MonitorMode::max;
  throw std::invalid_argument("dtl: mode '" + std::string(s) + "' is unknown: use \"min\" or \"max\"");
}

namespace callbacks {

using Mode = MonitorMode;

namespace detail {

/// The value of `monitor` in a validation's metrics, as a double. A missing or non-numeric
/// metric is the trial's mistake (a typo, or a metric only some validations report), so the
/// message names it, lists what validation did report, and says what to change.
///   double v = detail::monitored_value(metrics, "validation_loss", "EarlyStopping");
template <class Json>
[[nodiscard]] double monitored_value(const Json& metrics, const std::string& monitor, std::string_view who) {
  auto available = [&] {
    std::string names;
    for (auto it = metrics.begin(); it != metrics.end(); ++it) {
      if (!names.empty()) names += ", ";
      names += "'" + it.key() + "'";
    }
    return names.empty() ? std::string("none") : names;
  };
  const auto it = metrics.find(monitor);
  if (it == metrics.end())
    throw InvalidExperimentException("dtl: " + std::string(who) + " monitors '" + monitor +
                                     "', but validation reported no metric of that name (it reported: " + available() +
                                     "); set the callback's monitor to one of them");
  if (it->is_number()) return it->template get<double>();
  // null is what a non-finite value becomes after a trip through JSON text; read it as NaN so
  // the callback's own rule for non-finite values decides, instead of failing the run.
  if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();
  throw InvalidExperimentException("dtl: " + std::string(who) + " monitors '" + monitor +
                                   "', but validation reported it as " + it->dump() +
                                   ", not a number; monitor a scalar metric (numeric metrics: " + available() + ")");
}

/// A double as JSON that survives a text round trip (detail/json_float.hpp).
using dtl::detail::float_to_json;

/// The inverse of float_to_json; also takes a number stored as is, and Python json's
/// "Infinity" / "NaN".
[[nodiscard]] inline double float_from_json(const nlohmann::json& j, std::string_view key) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (const auto v = dtl::detail::non_finite_from_string(s)) return *v;
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  throw std::invalid_argument("dtl: state_dict entry '" + std::string(key) + "' is " + j.dump() +
                              ", not a number (or \"inf\", \"-inf\", \"nan\")");
}

}  // namespace detail
}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CALLBACKS_MONITOR_HPP
