// dtl — the stop sources every run has: SIGINT/SIGTERM, and the context's set_stop_requested
// (what callbacks such as EarlyStopping call).
#ifndef DTL_TRAINER_STOP_SOURCES_HPP
#define DTL_TRAINER_STOP_SOURCES_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/context.hpp>
#include <dtl/init.hpp>
#include <dtl/stop_source.hpp>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// SIGINT/SIGTERM (install_stop_signal_handlers): a stopped run exits with 128 + signal.
class SignalStop final : public StopSource {
 public:
  std::optional<std::string> stop_requested() override {
    if (const int sig = stop_signal_flag().load(std::memory_order_relaxed)) return name(sig);
    return std::nullopt;
  }
  std::optional<std::string> stopped(std::int64_t batches) override {
    const int sig = stop_signal_flag().load();
    if (!sig) return std::nullopt;
    preempted_by_signal().store(sig);  // main's return becomes exit status 128 + signal
    return "stopped at batch " + std::to_string(batches) + " by " + name(sig) +
           ", checkpoint saved; the program exits with status " + std::to_string(128 + sig);
  }

 private:
  static std::string name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
  }
};

/// PyTorchTrialContext::set_stop_requested(true).
class RequestedStop final : public StopSource {
 public:
  explicit RequestedStop(const PyTorchTrialContext& ctx) : ctx_(ctx) {}
  std::optional<std::string> stop_requested() override {
    if (ctx_.get_stop_requested()) return "set_stop_requested";
    return std::nullopt;
  }

 private:
  const PyTorchTrialContext& ctx_;
};

/// Every run's sources, in the order they are asked; a new kind of source is one more line.
inline std::vector<std::shared_ptr<StopSource>> default_stop_sources(const PyTorchTrialContext& ctx) {
  return {std::make_shared<SignalStop>(), std::make_shared<RequestedStop>(ctx)};
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_STOP_SOURCES_HPP
