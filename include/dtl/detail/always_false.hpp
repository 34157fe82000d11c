// dtl — always_false: a dependent false for static_asserts in discarded `if constexpr` branches.
#ifndef DTL_DETAIL_ALWAYS_FALSE_HPP
#define DTL_DETAIL_ALWAYS_FALSE_HPP

#include <dtl/detail/abi.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <class...>
inline constexpr bool always_false = false;
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_ALWAYS_FALSE_HPP
