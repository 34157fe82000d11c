// dtl — a double in dtl's JSON states, where JSON has no infinity or NaN: nlohmann would write
// `null`, so dtl spells them "inf", "-inf" and "nan", the strings Python's float() reads back.
// Callback and scheduler states use this spelling, and the checkpoint turns exactly these strings
// into Python floats and back (checkpoint/ivalue_json.hpp).
#ifndef DTL_DETAIL_JSON_FLOAT_HPP
#define DTL_DETAIL_JSON_FLOAT_HPP

#include <dtl/detail/abi.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// `v` as JSON that survives a text round trip: a number, or "inf", "-inf", "nan".
inline nlohmann::json float_to_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

/// The value that "inf", "-inf" or "nan" spells; nullopt for any other string.
inline std::optional<double> non_finite_from_string(std::string_view s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_JSON_FLOAT_HPP
