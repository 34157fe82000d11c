// dtl — how many SIGINT/SIGTERM the process has received (init's handler counts them), for a wait
// that a further signal should cut short (the final flush to a Determined master that is away).
#ifndef DTL_DETAIL_SIGNAL_COUNT_HPP
#define DTL_DETAIL_SIGNAL_COUNT_HPP

#include <dtl/detail/abi.hpp>

#include <atomic>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Lock-free, so the signal handler may add to it.
inline std::atomic<int>& stop_signal_count() noexcept {
  static std::atomic<int> n{0};
  static_assert(std::atomic<int>::is_always_lock_free);
  return n;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_SIGNAL_COUNT_HPP
