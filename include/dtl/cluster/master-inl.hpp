// dtl — the non-template definitions of <dtl/cluster/master.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CLUSTER_MASTER_INL_HPP
#define DTL_CLUSTER_MASTER_INL_HPP

#include <dtl/cluster/master.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE MasterOptions master_options_from_environment() {
  MasterOptions o;
  if (const char* s = std::getenv("DTL_MASTER_RETRY_SECONDS"); s && *s) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(v > 0) || !std::isfinite(v))
      throw ConfigError(std::string("dtl: DTL_MASTER_RETRY_SECONDS=") + s +
                        " is not a positive number of seconds (how long the master may stay unreachable)");
    o.retry_budget = std::chrono::milliseconds(static_cast<std::int64_t>(v * 1000));
    o.request_timeout = std::min(o.request_timeout, std::max(o.retry_budget, std::chrono::milliseconds(1000)));
  }
  return o;
}

DTL_INLINE nlohmann::json master_json(const nlohmann::ordered_json& value) {
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : value.items()) out[k] = master_json(v);
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : value) out.push_back(master_json(v));
    return out;
  }
  return nlohmann::json::parse(value.dump());
}

DTL_INLINE std::string iso_now() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::time_point_cast<std::chrono::seconds>(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now - secs).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%06lld+00:00", buf, static_cast<long long>(micros));
  return out;
}

namespace master_detail {

/// What to do about a refusal, for the error line.
inline std::string hint(const HttpResponse& r) {
  if (r.status == 401 || r.status == 403)
    return " (the master rejected the allocation token DET_SESSION_TOKEN: run the trial as the experiment's "
           "entrypoint, in the container the master started for it)";
  return "";
}

inline std::string seconds_text(std::chrono::milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", static_cast<double>(d.count()) / 1000.0);
  return b;
}

}  // namespace master_detail

DTL_INLINE HttpClient MasterSession::make_client() const {
  return HttpClient({.base_url = info_.master_url,
                     .headers = {"Grpc-Metadata-x-allocation-token: Bearer " + info_.session_token,
                                 "Content-Type: application/json", "Expect:"},
                     .cert_file = info_.cert_file,
                     .cert_name = info_.cert_name});
}

DTL_INLINE MasterSession::MasterSession(ClusterInfo info, MasterOptions options)
    : info_(std::move(info)), opts_(options) {
  nlohmann::json body = {{"runId", info_.trial_id}};
  if (!info_.checkpoint_storage.empty()) body["checkpointStorage"] = info_.checkpoint_storage;
  const auto r = call("POST", "/api/v1/runs/start", &body, "the start of the run (POST /api/v1/runs/start)");
  if (!r.ok())
    throw ClusterError("dtl: the master at " + info_.master_url + " did not start the run (POST /api/v1/runs/start): " +
                       r.describe() + master_detail::hint(r));
  const auto answer = nlohmann::json::parse(r.body, nullptr, false);
  if (answer.is_object() && answer.contains("storageId")) {
    if (!answer["storageId"].is_number_integer() && !answer["storageId"].is_null())
      throw ClusterError("dtl: the master at " + info_.master_url +
                         " answered the start of the run (POST /api/v1/runs/start) with storageId " +
                         master_detail::excerpt(answer["storageId"].dump()) +
                         ", not an integer; check that DET_MASTER points at a Determined master");
    storage_id_ = answer["storageId"];
  }
  sender_ = std::thread([this] { send_loop(); });
  active_master_session() = this;
}

DTL_INLINE MasterSession::~MasterSession() {
  MasterSession* self = this;
  active_master_session().compare_exchange_strong(self, nullptr);
  quit_poller_ = true;
  { std::lock_guard sync(sleep_mu_); }  // a poller between its check and its 10 s sleep sees quit_poller_
  sleep_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  {
    std::lock_guard lock(mu_);  // under the lock, or the sender could miss the wake-up and never end
    quit_sender_ = true;
  }
  cv_.notify_all();
  drain(std::chrono::seconds(10));  // what a run that failed before flush left queued: a last short try
  std::string undelivered;
  {
    std::lock_guard lock(mu_);
    undelivered = queued_reports();
    if (!queue_.empty()) abandon_ = true;
  }
  { std::lock_guard sync(sleep_mu_); }  // a sender between its check and its sleep sees abandon_
  sleep_cv_.notify_all();
  cv_.notify_all();
  if (sender_.joinable()) sender_.join();
  if (!undelivered.empty())
    std::cerr << "dtl: warning: these reports never reached the master at " << info_.master_url << ":" << undelivered
              << "\n";
}

DTL_INLINE std::string MasterSession::queued_reports() const {
  std::string out;
  for (const auto& q : queue_)
    if (!q.reply) out += "\n  " + q.what;
  return out;
}

DTL_INLINE bool MasterSession::sleep_unless(std::chrono::milliseconds d, const std::atomic<bool>& quit) {
  std::unique_lock lock(sleep_mu_);
  return !sleep_cv_.wait_for(lock, d, [&] { return quit.load(); });
}

DTL_INLINE HttpResponse MasterSession::call(std::string_view method, const std::string& path,
                                            const nlohmann::json* body, const std::string& what) {
  auto client = make_client();
  const std::string text = body ? body->dump() : std::string();
  const auto deadline = std::chrono::steady_clock::now() + opts_.retry_budget;
  auto backoff = opts_.first_backoff;
  bool warned = false;
  for (;;) {
    auto r = client.request(method, path, body ? &text : nullptr, opts_.request_timeout);
    if (!r.transient() || std::chrono::steady_clock::now() + backoff > deadline) return r;
    if (!warned) {
      std::cerr << "dtl: warning: the master at " << info_.master_url << " did not answer " << what << " ("
                << r.describe() << "); retrying for up to " << master_detail::seconds_text(opts_.retry_budget)
                << " s\n";
      warned = true;
    }
    if (!sleep_unless(backoff, abandon_)) return r;
    backoff = std::min(backoff * 2, opts_.max_backoff);
  }
}

DTL_INLINE void MasterSession::send(std::string method, std::string path, const nlohmann::json& body,
                                    std::string what, std::function<void()> delivered) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(method), std::move(path), body.is_null() ? std::string() : body.dump(), std::move(what),
                      nullptr, std::move(delivered)});
  }
  cv_.notify_all();
}

DTL_INLINE HttpResponse MasterSession::ask(std::string method, std::string path, std::string what,
                                           std::chrono::milliseconds max_wait) {
  if (unreachable_.load())
    return {.status = 0, .body = {}, .error = "the master is not answering (reports are being retried)"};
  auto reply = std::make_shared<std::promise<HttpResponse>>();
  auto answer = reply->get_future();
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(method), std::move(path), std::string(), std::move(what), std::move(reply)});
  }
  cv_.notify_all();
  if (answer.wait_for(max_wait) == std::future_status::ready) {
    try {
      return answer.get();
    } catch (const std::future_error&) {  // dropped unanswered (the session is closing)
    }
  }
  return {.status = 0, .body = {}, .error = "no answer within " + master_detail::seconds_text(max_wait) + " s"};
}

DTL_INLINE void MasterSession::send_loop() {
  auto client = make_client();
  auto backoff = opts_.first_backoff;
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  bool warned = false;
  for (;;) {
    Request req;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || quit_sender_.load(); });
      if (queue_.empty() || abandon_) return;
      req = queue_.front();
      sending_ = true;
    }
    auto r = client.request(req.method, req.path, req.body.empty() ? nullptr : &req.body, opts_.request_timeout,
                            &abandon_);
    {
      std::lock_guard lock(mu_);
      sending_ = false;
      if (req.reply) {  // asked: the caller decides what a failure means
        req.reply->set_value(std::move(r));
        queue_.pop_front();
        cv_.notify_all();
        continue;
      }
      if (!r.transient()) {
        if (!r.ok() && !failure_)
          failure_ = "dtl: the master at " + info_.master_url + " refused " + req.what + ": " + r.describe() +
                     master_detail::hint(r);
        queue_.pop_front();
        if (r.ok() && req.delivered) req.delivered();
        if (warned) std::cerr << "dtl: the master at " << info_.master_url << " answers again\n";
        unreachable_ = false;
        failing_since.reset();
        warned = false;
        backoff = opts_.first_backoff;
        cv_.notify_all();
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (!failing_since) failing_since = now;
      unreachable_ = true;
      if (!warned) {
        std::cerr << "dtl: warning: the master at " << info_.master_url << " did not take " << req.what << " ("
                  << r.describe() << "); training goes on, and what is reported is kept and retried for up to "
                  << master_detail::seconds_text(opts_.retry_budget) << " s\n";
        warned = true;
      }
      if (now - *failing_since > opts_.retry_budget) {
        const std::string lost = queued_reports();
        for (const auto& q : queue_)
          if (q.reply)  // an ask() waiting: it gets the failure as its answer
            q.reply->set_value({.status = 0, .body = {}, .error = "the master did not answer: " + r.describe()});
        if (!failure_)
          failure_ = "dtl: the master at " + info_.master_url + " has not answered for " +
                     master_detail::seconds_text(opts_.retry_budget) + " s (DTL_MASTER_RETRY_SECONDS; last: " +
                     r.describe() + "); these never reached it:" + lost;
        queue_.clear();
        failing_since.reset();
        warned = false;
        cv_.notify_all();
        continue;
      }
    }
    if (!sleep_unless(backoff, abandon_)) return;
    backoff = std::min(backoff * 2, opts_.max_backoff);
  }
}

DTL_INLINE void MasterSession::check() {
  std::lock_guard lock(mu_);
  if (failure_) throw ClusterError(*failure_);
}

DTL_INLINE void MasterSession::flush() {
  {
    std::unique_lock lock(mu_);
    if (!failure_) {
      const auto bound = opts_.retry_budget + opts_.request_timeout + std::chrono::seconds(1);
      const auto deadline = std::chrono::steady_clock::now() + bound;
      const auto bound_text =
          master_detail::seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(bound));
      auto delivered = [&] { return (queue_.empty() && !sending_) || failure_.has_value(); };
      // A signal from here on (a second SIGTERM, Ctrl-C) ends the wait: the reports still owed are
      // named in the error. The first few seconds are silent (a master that answers takes ms).
      const int signals = stop_signal_count().load();
      bool said = false;
      for (auto slice = std::chrono::milliseconds(100); !delivered();) {
        if (cv_.wait_for(lock, slice, delivered)) break;
        const auto now = std::chrono::steady_clock::now();
        if (stop_signal_count().load() != signals) {
          signalled_ = true;
          failure_ = "dtl: stopped waiting for the master at " + info_.master_url +
                     " (a signal); these never reached it:" + queued_reports();
          break;
        }
        if (now >= deadline) {
          failure_ = "dtl: gave up waiting for the master at " + info_.master_url + " after " + bound_text +
                     " s; these never reached it:" + queued_reports();
          break;
        }
        if (!said && now + bound - deadline >= std::chrono::seconds(2)) {
          said = true;
          const auto owed = queued_reports();
          std::cerr << "dtl: waiting up to " << bound_text << " s for the master at " << info_.master_url
                    << " to take " << std::count(owed.begin(), owed.end(), '\n')
                    << " report(s) still queued (DTL_MASTER_RETRY_SECONDS); SIGTERM or Ctrl-C stops waiting\n";
        }
      }
    } else if (const auto left = queued_reports(); !left.empty()) {
      // Failed earlier: what was queued since (the stop checkpoint's registration) is named too.
      *failure_ += "\nand, queued since:" + left;
    }
  }
  check();
}

DTL_INLINE bool MasterSession::failed() {
  std::lock_guard lock(mu_);
  return failure_.has_value();
}

DTL_INLINE bool MasterSession::preemption_requested() {
  if (!first_answer_.load(std::memory_order_acquire) && poller_.joinable()) {
    std::unique_lock lock(sleep_mu_);
    sleep_cv_.wait_for(lock, opts_.request_timeout + std::chrono::seconds(1),
                       [&] { return first_answer_.load() || quit_poller_.load(); });
  }
  return preempt_.load(std::memory_order_relaxed);
}

DTL_INLINE void MasterSession::drain(std::chrono::milliseconds bound) noexcept {
  if (signalled_) return;  // the user already said to stop waiting
  try {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, bound, [&] { return queue_.empty() && !sending_; });
  } catch (...) {
  }
}

DTL_INLINE void MasterSession::watch_preemption() {
  if (poller_.joinable()) return;
  poller_ = std::thread([this] { poll_loop(); });
}

DTL_INLINE void MasterSession::poll_loop() {
  auto client = make_client();
  const std::string base = "/api/v1/allocations/" + url_segment(info_.allocation_id) + "/signals/preemption?timeout_seconds=";
  int wait = 0;  // a quick first answer, then the long poll (as Determined's _PreemptionWatcher)
  while (!quit_poller_) {
    auto r = client.request("GET", base + std::to_string(wait), nullptr, std::chrono::seconds(wait + 10), &quit_poller_);
    if (quit_poller_) return;
    wait = opts_.poll_seconds;
    const bool first = !first_answer_.load();
    if (r.ok()) {
      const auto answer = nlohmann::json::parse(r.body, nullptr, false);
      const auto* preempt = answer.is_object() && answer.contains("preempt") ? &answer["preempt"] : nullptr;
      if (preempt && !preempt->is_boolean()) {
        // Not an answer dtl can act on: the run stops at its next boundary, with a checkpoint,
        // naming this (a guess either way could lose the run or ignore a preemption).
        {
          std::lock_guard lock(mu_);
          if (!failure_)
            failure_ = "dtl: the master at " + info_.master_url + " answered the preemption poll (GET " +
                       base.substr(0, base.find('?')) + ") with \"preempt\": " + master_detail::excerpt(preempt->dump()) +
                       ", which is not true or false; the trial stopped with a checkpoint — check that DET_MASTER "
                       "points at a Determined master";
        }
        cv_.notify_all();
        preempt_ = false;
        if (first) {
          {
            std::lock_guard lock(sleep_mu_);
            first_answer_ = true;
          }
          sleep_cv_.notify_all();
        }
        return;
      }
      if (preempt && preempt->get<bool>()) preempt_ = true;
    }
    if (first) {  // answered or failed: the first boundary need not wait any longer
      {
        std::lock_guard lock(sleep_mu_);
        first_answer_ = true;
      }
      sleep_cv_.notify_all();
    }
    if (preempt_) return;
    if (r.ok()) continue;
    if (!sleep_unless(std::chrono::seconds(10), quit_poller_)) return;  // Determined's client waits 10 s too
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CLUSTER_MASTER_INL_HPP
