// dtl — always_false: a dependent false for static_asserts in discarded `if constexpr` branches.
#ifndef DTL_DETAIL_ALWAYS_FALSE_HPP
#define DTL_DETAIL_ALWAYS_FALSE_HPP

#include <dtl/detail/abi.hpp>

namespace dtl::inline DTL_ABI::detail {
template <class...>
inline constexpr bool always_false = false;
}  // namespace dtl::detail

#endif  // DTL_DETAIL_ALWAYS_FALSE_HPP
