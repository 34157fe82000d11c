// dtl — the definitions behind <dtl/callbacks/monitor.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
#ifndef DTL_CALLBACKS_MONITOR_INL_HPP
#define DTL_CALLBACKS_MONITOR_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/callbacks/monitor.hpp>

namespace dtl::inline DTL_ABI {

DTL_INLINE MonitorMode parse_monitor_mode(std::string_view s) {
  if (s == "min") return MonitorMode::min;
  if (s == "max") return MonitorMode::max;
  throw std::invalid_argument("dtl: mode '" + std::string(s) + "' is unknown: use \"min\" or \"max\"");
}

}  // namespace dtl

namespace dtl::inline DTL_ABI::callbacks::detail {

DTL_INLINE double float_from_json(const nlohmann::json& j, std::string_view key) {
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

}  // namespace dtl::callbacks::detail

#endif  // DTL_CALLBACKS_MONITOR_INL_HPP
