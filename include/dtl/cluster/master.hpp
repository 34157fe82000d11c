// dtl — the chief's connection to a Determined master: MasterSession sends the Core API's calls
// (the Python client's paths, bodies and token header) in order from a thread of its own,
// retrying with back-off while the master is down or slow, and watches for preemption on another
// (the long poll). Training never waits on the master, except at the end of a run for what is
// still queued, and never longer than the retry budget.
#ifndef DTL_CLUSTER_MASTER_HPP
#define DTL_CLUSTER_MASTER_HPP

#include <dtl/cluster/http.hpp>
#include <dtl/cluster/info.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/errors.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <dtl/detail/signal_count.hpp>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct MasterOptions {
  /// How long the master may stay unreachable (or answer 5xx) before the run fails with a
  /// ClusterError; the environment's DTL_MASTER_RETRY_SECONDS sets it.
  std::chrono::milliseconds retry_budget{std::chrono::minutes(10)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  /// The preemption long poll's timeout_seconds (Determined's client asks for 60).
  int poll_seconds = 60;
  /// Back-off between tries: doubles from `first_backoff` up to `max_backoff`.
  std::chrono::milliseconds first_backoff{500};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(16)};
};

namespace master_detail {
/// A value from the master's answer, short enough for one error line.
inline std::string excerpt(const std::string& s) { return s.size() <= 60 ? s : s.substr(0, 57) + "..."; }
}  // namespace master_detail

/// The options with the environment's overrides (DTL_MASTER_RETRY_SECONDS).
DTL_INLINE MasterOptions master_options_from_environment();

/// Python's json_encode: non-finite floats become the strings "NaN", "Infinity" and "-Infinity"
/// (nlohmann would write null, which the master would store as a missing value).
DTL_INLINE nlohmann::json master_json(const nlohmann::ordered_json& value);

/// Now, as Python's datetime.now(timezone.utc).isoformat(): 2026-11-26T08:40:00.123456+00:00.
DTL_INLINE std::string iso_now();

class MasterSession;
/// Whether this process runs as a Determined cluster trial (set by dtl::init).
inline std::atomic<bool>& cluster_trial_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
/// The process's MasterSession (the chief's, while it lives), for the exit path of a failing
/// run: what is queued gets a last, bounded chance (init.hpp's terminate handler).
inline std::atomic<MasterSession*>& active_master_session() {
  static std::atomic<MasterSession*> session{nullptr};
  return session;
}

class MasterSession {
 public:
  /// Connects (POST /api/v1/runs/start, retried within the budget: nothing is lost yet if the
  /// master is down at the start), then starts the sending thread.
  DTL_INLINE MasterSession(ClusterInfo info, MasterOptions options);
  /// Stops the threads; what is still queued gets a last short try.
  DTL_INLINE ~MasterSession();
  MasterSession(const MasterSession&) = delete;
  MasterSession& operator=(const MasterSession&) = delete;

  [[nodiscard]] const ClusterInfo& info() const noexcept { return info_; }
  /// The storage id /runs/start returned (null if none), sent with each checkpoint.
  [[nodiscard]] const nlohmann::json& storage_id() const noexcept { return storage_id_; }

  /// Queues `method path body` to be sent in order; `what` names it in errors. Never blocks.
  DTL_INLINE void send(std::string method, std::string path, const nlohmann::json& body, std::string what,
                       std::function<void()> delivered = {});
  /// A request answered now, from the calling thread (retried within the budget): for the few
  /// calls whose answer the run needs. 4xx answers are returned, not thrown.
  DTL_INLINE HttpResponse call(std::string_view method, const std::string& path, const nlohmann::json* body,
                               const std::string& what);
  /// A request whose answer the run needs, sent in its turn after everything queued before it
  /// (so the master sees the chief's calls in program order), tried once; waits at most
  /// `max_wait` for the answer, else returns an error response — at once while the master is
  /// not answering (the queue is being retried), so training does not wait on it.
  DTL_INLINE HttpResponse ask(std::string method, std::string path, std::string what,
                              std::chrono::milliseconds max_wait);
  /// Throws the ClusterError the sending thread met (a refused report, or the master gone for
  /// longer than the budget), if any.
  DTL_INLINE void check();
  /// Whether the sending thread met a failure check() would throw.
  [[nodiscard]] DTL_INLINE bool failed();
  /// Waits until everything queued was delivered, then check(); bounded by the retry budget, said
  /// after 2 s of waiting, and ended by a signal received meanwhile (detail::stop_signal_count).
  DTL_INLINE void flush();

  /// Waits up to `bound` for what is queued to be delivered; never throws (the last chance of a
  /// run that is failing).
  DTL_INLINE void drain(std::chrono::milliseconds bound) noexcept;

  /// Starts the preemption long poll (GET …/signals/preemption) on its own thread.
  DTL_INLINE void watch_preemption();
  /// Whether the master asks this trial to stop. The first call waits for the watch's first
  /// answer (a quick one: timeout_seconds=0), as Determined's should_preempt does, so that a
  /// preemption pending when the trial started stops it at its first boundary.
  [[nodiscard]] DTL_INLINE bool preemption_requested();

 private:
  struct Request {
    std::string method, path, body, what;
    std::shared_ptr<std::promise<HttpResponse>> reply;  // ask(): answered once, never retried
    std::function<void()> delivered;  // send(): called on the sending thread once the master took it
  };
  DTL_INLINE HttpClient make_client() const;
  /// "\n  what" for each queued report (not the asks), for an error; call with mu_ held.
  [[nodiscard]] DTL_INLINE std::string queued_reports() const;
  DTL_INLINE void send_loop();
  DTL_INLINE void poll_loop();
  /// Sleeps `d`, or less when `quit` turns true; false if it did.
  DTL_INLINE bool sleep_unless(std::chrono::milliseconds d, const std::atomic<bool>& quit);

  ClusterInfo info_;
  MasterOptions opts_;
  nlohmann::json storage_id_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  bool sending_ = false;  // the front is in flight
  std::atomic<bool> unreachable_{false};  // the sending thread is retrying
  std::optional<std::string> failure_;
  std::atomic<bool> quit_sender_{false};
  std::atomic<bool> abandon_{false};
  std::atomic<bool> signalled_{false};  // a signal ended flush's wait: no further waits on the way out
  std::thread sender_;

  std::atomic<bool> preempt_{false};
  std::atomic<bool> first_answer_{false};
  std::atomic<bool> quit_poller_{false};
  std::thread poller_;
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/cluster/master-inl.hpp>
#endif

#endif  // DTL_CLUSTER_MASTER_HPP
