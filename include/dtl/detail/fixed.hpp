// dtl — detail::fixed(v, digits): a number with a fixed count of decimals, as the console shows it.
#ifndef DTL_DETAIL_FIXED_HPP
#define DTL_DETAIL_FIXED_HPP

#include <dtl/detail/abi.hpp>

#include <cstdio>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

[[nodiscard]] inline std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_FIXED_HPP
