// dtl — worker threads that load batches ahead of the training thread, in sampler order.
//
// The training thread stays the only one that touches the sampler: it draws index batches (cheap,
// deterministic) and hands them to `num_workers` threads through a ring of
// `num_workers * prefetch_factor` slots; the workers fetch and collate, and the training thread
// takes the results back in the order it handed them out. So the data order never depends on
// thread timing, and a sampler state can be recorded per slot for exact resume.
#ifndef DTL_DATA_PREFETCHER_HPP
#define DTL_DATA_PREFETCHER_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/samplers/sampler_state.hpp>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Runs `Loader::fetch(indices)` on worker threads (torch-free itself, so it can be tested under
/// ThreadSanitizer, which LibTorch is not built for). `Loader` needs `batch_type` and a `fetch`
/// that may be called from several threads at once (a const member that reads the dataset).
/// Not movable: the workers hold `this`.
template <class Loader>
class Prefetcher {
 public:
  using batch_type = typename Loader::batch_type;

  Prefetcher(const Loader& loader, std::int64_t num_workers, std::int64_t prefetch_factor)
      : loader_(&loader), slots_(static_cast<std::size_t>(num_workers * prefetch_factor)) {
    workers_.reserve(static_cast<std::size_t>(num_workers));
    try {
      for (std::int64_t w = 0; w < num_workers; ++w) workers_.emplace_back([this] { work(); });
    } catch (...) {
      shutdown();
      throw;
    }
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher() { shutdown(); }

  /// Slots free for submit().
  [[nodiscard]] bool has_room() const noexcept {
    return submitted_ - taken_ < static_cast<std::int64_t>(slots_.size());
  }
  /// Batches handed out and not yet taken back.
  [[nodiscard]] bool pending() const noexcept { return submitted_ > taken_; }

  /// Queues a batch of indices. `write_state(sampler_state&)`, unless it is nullptr, records where
  /// the sampler stands after this batch, kept with the slot for resume. Requires has_room().
  /// Copies reuse the slot's buffers: no allocation once the ring has gone round.
  template <class WriteState>
  void submit(std::span<const std::int64_t> indices, WriteState&& write_state) {
    Slot& s = slot(submitted_);
    s.indices.assign(indices.begin(), indices.end());
    if constexpr (!std::is_null_pointer_v<std::remove_cvref_t<WriteState>>) write_state(s.state);
    {
      std::lock_guard lock(mutex_);
      ++submitted_;
    }
    work_cv_.notify_one();
  }

  /// Waits for the oldest pending batch and moves it out; rethrows a worker's exception here, on
  /// the caller's thread. If `state` is given, it receives the slot's sampler state (swapped, so
  /// no copy).
  batch_type take(samplers::sampler_state* state) {
    Slot& s = slot(taken_);
    {
      std::unique_lock lock(mutex_);
      ready_cv_.wait(lock, [&] { return s.ready; });
      s.ready = false;
    }
    ++taken_;
    if (state) std::swap(*state, s.state);
    if (s.error) {
      auto error = std::exchange(s.error, nullptr);
      std::rethrow_exception(error);
    }
    batch_type out = std::move(*s.batch);
    s.batch.reset();
    return out;
  }

 private:
  struct Slot {
    std::vector<std::int64_t> indices;
    samplers::sampler_state state;
    std::optional<batch_type> batch;
    std::exception_ptr error;
    bool ready = false;  // guarded by mutex_
  };

  Slot& slot(std::int64_t seq) {
    return slots_[static_cast<std::size_t>(seq % static_cast<std::int64_t>(slots_.size()))];
  }

  void work() {
    for (;;) {
      std::int64_t seq = 0;
      {
        std::unique_lock lock(mutex_);
        work_cv_.wait(lock, [&] { return stop_ || next_job_ < submitted_; });
        if (stop_) return;
        seq = next_job_++;
      }
      Slot& s = slot(seq);
      try {
        s.batch.emplace(loader_->fetch(std::span<const std::int64_t>(s.indices)));
      } catch (...) {
        s.error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        s.ready = true;
      }
      ready_cv_.notify_one();
    }
  }

  void shutdown() noexcept {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& w : workers_)
      if (w.joinable()) w.join();
    workers_.clear();
  }

  const Loader* loader_;
  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_cv_;   // workers wait for a submitted batch
  std::condition_variable ready_cv_;  // the taker waits for its slot
  bool stop_ = false;                 // guarded by mutex_
  std::int64_t next_job_ = 0;         // next sequence number a worker takes; guarded by mutex_
  std::int64_t submitted_ = 0;        // written by the owner thread under mutex_
  std::int64_t taken_ = 0;            // owner thread only
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_PREFETCHER_HPP
