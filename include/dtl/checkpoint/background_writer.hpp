// dtl — one checkpoint write at a time, off the training thread. The training thread hands over
// a snapshot and goes on; the write's result (or its failure) is collected at a point the caller
// chooses, and the destructor waits, so nothing in flight is lost when the owner goes away.
#ifndef DTL_CHECKPOINT_BACKGROUND_WRITER_HPP
#define DTL_CHECKPOINT_BACKGROUND_WRITER_HPP

#include <dtl/detail/abi.hpp>

#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

template <class Result>
class BackgroundWriter {
 public:
  BackgroundWriter() = default;
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;
  ~BackgroundWriter() {
    if (in_flight_.valid()) in_flight_.wait();  // flushed before the owner (and the program) goes on
  }

  /// Starts `job` on a thread of its own. At most one is in flight: the caller collects the
  /// previous one first (wait()).
  void start(std::function<Result()> job) {
    if (in_flight_.valid()) throw std::logic_error("dtl: a checkpoint write is already in flight");
    in_flight_ = std::async(std::launch::async, std::move(job));
  }

  /// Waits for the write in flight and returns its result, or rethrows its failure; nullopt when
  /// nothing was in flight.
  std::optional<Result> wait() {
    if (!in_flight_.valid()) return std::nullopt;
    return in_flight_.get();  // get() leaves the future empty, also when it throws
  }

 private:
  std::future<Result> in_flight_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif
